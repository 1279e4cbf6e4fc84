#!/usr/bin/env python3
"""gen_calllog.py: generate the call log's code from abi/calls.def.

Usage:
  gen_calllog.py calls.def OUTDIR          write the generated files
  gen_calllog.py calls.def --check FACTS   compare the table with the ABI
                                           facts (abi-facts.json); exit 1
                                           on any difference

Generated files (OUTDIR):
  calllog_ids.h        enum cl_fn_id: one id per table entry
  calllog_table.c      cl_fns[]: the descriptors `trnemu replay` and the
                       recorder read (names, roles, types, flags)
  calllog_impl.h       prototypes of trnemu's implementations, NAME_impl,
                       which the shim sources define under that name
  calllog_wrap_impl.c  exported wrappers of libnrt.so.1 calling NAME_impl
  calllog_wrap_next.c  exported wrappers of libnrt-record.so calling the next
                       library's NAME (dlsym RTLD_NEXT)
  libnrt-record.map    version script of libnrt-record.so
"""
import json
import os
import re
import sys

# C type -> descriptor type (enum cl_type in store/calllog.h).
VALUE_TYPES = {
    'bool': 'CL_T_BOOL',
    'int': 'CL_T_I32', 'int32_t': 'CL_T_I32', 'NRT_STATUS': 'CL_T_I32',
    'nrt_framework_type_t': 'CL_T_I32', 'nrt_tensor_placement_t': 'CL_T_I32',
    'nrt_dtype_t': 'CL_T_I32', 'nrt_op_type_t': 'CL_T_I32', 'nrt_cc_op_type_t': 'CL_T_I32',
    'nrta_xu_t': 'CL_T_I32',
    'uint32_t': 'CL_T_U32',
    'int64_t': 'CL_T_I64',
    'uint64_t': 'CL_T_U64', 'size_t': 'CL_T_U64', 'nrta_seq_t': 'CL_T_U64',
    'NRT_ASYNC_EXEC_STATUS_CALLBACK': 'CL_T_PTR',
}
ROLES = {
    'val': 'CL_R_VAL', 'str': 'CL_R_STR', 'hin': 'CL_R_HIN', 'hout': 'CL_R_HOUT',
    'hinout': 'CL_R_HINOUT', 'in': 'CL_R_IN', 'in_keep': 'CL_R_IN', 'out': 'CL_R_OUT',
    'out_keep': 'CL_R_OUT', 'oval': 'CL_R_OVAL', 'ioval': 'CL_R_IOVAL',
    'batch_in': 'CL_R_BATCH_IN', 'batch_out': 'CL_R_BATCH_OUT', 'raw': 'CL_R_RAW',
    'opaque': 'CL_R_OPAQUE', 'cb': 'CL_R_CB',
}
SIZED = {'in', 'in_keep', 'out', 'out_keep', 'batch_in', 'batch_out'}
KINDS = ['tensor', 'tset', 'model', 'tinfo', 'comm', 'req', 'tracker', 'ccctx',
         'inspect', 'profopt', 'systrace', 'sysfetch', 'mem']
FLAGS = {'init': 'CL_F_INIT', 'close': 'CL_F_CLOSE', 'exec': 'CL_F_EXEC', 'env': 'CL_F_ENV',
         'noreplay': 'CL_F_NOREPLAY', 'skip': 'CL_F_SKIP', 'notshim': 'CL_F_NOTSHIM',
         'ret!': 'CL_F_RET_NOCMP'}


class TableError(Exception):
    pass


def norm_type(t):
    """Canonical spelling of a C type: single spaces, one space before the stars."""
    t = re.sub(r'\s+', ' ', t.strip())
    t = re.sub(r'\s*\*\s*', '*', t)
    return re.sub(r'([^*])\*', r'\1 *', t)


def value_type(ctype, where):
    t = norm_type(ctype)
    if t.endswith('*'):
        return 'CL_T_PTR'
    base = t.replace('const ', '')
    if base not in VALUE_TYPES:
        raise TableError(f'{where}: unknown type "{ctype}" (add it to VALUE_TYPES)')
    return VALUE_TYPES[base]


def pointee(ctype):
    t = norm_type(ctype)
    assert t.endswith('*')
    return t[:-1].strip()


def parse_arg(text, fn):
    decl, _, role = text.partition(':')
    m = re.match(r'^(.*?)([A-Za-z_]\w*)\s*$', decl.strip(), re.S)
    if not m:
        raise TableError(f'{fn}: cannot parse argument "{text}"')
    ctype, name = m.group(1).strip(), m.group(2)
    words = role.split(None, 1)
    rname = words[0] if words else None
    rparam = words[1].strip() if len(words) > 1 else None
    nocmp = False
    if rname and rname.endswith('!'):
        rname, nocmp = rname[:-1], True
    where = f'{fn}({name})'
    if rname is None:
        if norm_type(ctype) in ('const char *', 'char const *'):
            rname = 'str'
        elif norm_type(ctype).endswith('*') and ctype.strip() != 'NRT_ASYNC_EXEC_STATUS_CALLBACK':
            raise TableError(f'{where}: a pointer argument needs a role')
        else:
            rname = 'val'
    if rname not in ROLES:
        raise TableError(f'{where}: unknown role "{rname}"')
    kind = 'CL_K_NONE'
    size = None
    if rname in ('hin', 'hout', 'hinout'):
        if rparam not in KINDS:
            raise TableError(f'{where}: handle role needs a kind ({" ".join(KINDS)})')
        kind = 'CL_K_' + rparam.upper()
    elif rname in SIZED:
        if not rparam:
            raise TableError(f'{where}: role {rname} needs a size expression')
        size = rparam
    elif rparam:
        raise TableError(f'{where}: role {rname} takes no parameter')
    ptype = 'CL_T_VOID'
    if rname in ('oval', 'ioval'):
        ptype = value_type(pointee(ctype), where)
    return {
        'ctype': ctype, 'name': name, 'role': rname, 'kind': kind, 'size': size,
        'nocmp': nocmp, 'type': value_type(ctype, where), 'ptype': ptype,
        'keep': rname in ('in_keep', 'out_keep'),
    }


def split_top(text):
    """Split on commas outside parentheses."""
    out, depth, cur = [], 0, ''
    for ch in text:
        if ch == '(':
            depth += 1
        elif ch == ')':
            depth -= 1
        if ch == ',' and depth == 0:
            out.append(cur)
            cur = ''
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def parse_entry(line):
    m = re.match(r'^(.*?)\b([A-Za-z_]\w*)\s*\((.*)\)\s*(@.*)?$', line, re.S)
    if not m:
        raise TableError(f'cannot parse: {line}')
    ret, name, args, flags = m.group(1).strip(), m.group(2), m.group(3), m.group(4) or ''
    fn = {'ret': ret, 'name': name, 'args': [], 'flags': [], 'why': None}
    if args.strip() != 'void':
        fn['args'] = [parse_arg(a, name) for a in split_top(args)]
    for f in re.findall(r'@(\S+(?:[^@]*)?)', flags):
        key, _, why = f.strip().partition(':')
        if key not in FLAGS:
            raise TableError(f'{name}: unknown flag @{key}')
        fn['flags'].append(key)
        if why:
            fn['why'] = why.strip()
    if ('noreplay' in fn['flags'] or 'skip' in fn['flags']) and not fn['why']:
        raise TableError(f'{name}: @noreplay / @skip need a reason')
    if len(fn['args']) > 8:
        raise TableError(f'{name}: more than 8 arguments (raise CL_MAX_ARGS)')
    names = {a['name'] for a in fn['args']}
    for a in fn['args']:
        if a['size']:
            for ident in re.findall(r'\$?[A-Za-z_]\w*', a['size']):
                bare = ident.lstrip('$')
                if ident.startswith('$') and bare not in names:
                    raise TableError(f'{name}: ${bare} is not an argument')
    return fn


def read_table(path):
    entries, cur = [], None
    with open(path, encoding='utf-8') as f:
        for raw in f:
            line = raw.rstrip('\n')
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            if line[0].isspace():
                if cur is None:
                    raise TableError(f'continuation without an entry: {line}')
                cur += ' ' + line.strip()
            else:
                if cur is not None:
                    entries.append(cur)
                cur = line.strip()
    if cur is not None:
        entries.append(cur)
    fns = [parse_entry(e) for e in entries]
    seen = set()
    for fn in fns:
        if fn['name'] in seen:
            raise TableError(f'{fn["name"]} appears twice')
        seen.add(fn['name'])
    return fns


def ret_kind(fn):
    t = norm_type(fn['ret'])
    if t == 'void':
        return 'CL_RET_VOID'
    if t == 'NRT_STATUS':
        return 'CL_RET_STATUS'
    if t == 'const char *':
        return 'CL_RET_STR'
    if t.endswith('*'):
        return 'CL_RET_PTR'
    return 'CL_RET_INT'


def ret_type(fn):
    t = norm_type(fn['ret'])
    return 'CL_T_VOID' if t == 'void' else value_type(fn['ret'], fn['name'])


def params(fn, names=True):
    if not fn['args']:
        return 'void'
    return ', '.join(decl(a['ctype'], a['name'] if names else '') for a in fn['args'])


def decl(ctype, name):
    t = norm_type(ctype)
    return t + name if t.endswith('*') or not name else f'{t} {name}'


def call_args(fn):
    return ', '.join(a['name'] for a in fn['args'])


def size_expr(a):
    expr = re.sub(r'\$([A-Za-z_]\w*)', r'((\1) != NULL ? (uint64_t)*(\1) : 0)', a['size'])
    return f'(uint64_t)({expr})'


def arg_value(a):
    if a['type'] == 'CL_T_PTR':
        return f"(uint64_t)(uintptr_t){a['name']}"
    if a['type'] == 'CL_T_BOOL':
        return f"(uint64_t){a['name']}"
    if a['type'] in ('CL_T_I32', 'CL_T_I64'):
        return f"(uint64_t)(int64_t){a['name']}"
    return f"(uint64_t){a['name']}"


def ret_to_u64(fn, var):
    k = ret_kind(fn)
    if k in ('CL_RET_PTR', 'CL_RET_STR'):
        return f'(uint64_t)(uintptr_t){var}'
    if k == 'CL_RET_STATUS':
        return f'(uint64_t)(int64_t){var}'
    return f'(uint64_t){var}'


def missing_return(fn):
    k = ret_kind(fn)
    return {'CL_RET_VOID': 'return;', 'CL_RET_STATUS': 'return NRT_FAILURE;',
            'CL_RET_INT': 'return 0;', 'CL_RET_PTR': 'return NULL;',
            'CL_RET_STR': 'return "unknown (no next libnrt)";'}[k]


HEADER = '/* Generated by abi/gen_calllog.py from abi/calls.def: do not edit. */\n'
INCLUDES = '''#include <stdint.h>
#include <stddef.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_async_sendrecv.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_profile.h"
#include "nrt/nrt_sys_trace.h"
#include "nrt/nrt_version.h"
#include "trnemu/trnemu.h"
#include "store/calllog.h"
'''


def gen_ids(fns):
    out = [HEADER, '#ifndef TRNEMU_STORE_CALLLOG_IDS_H\n#define TRNEMU_STORE_CALLLOG_IDS_H\n\n',
           'enum cl_fn_id {\n']
    for fn in fns:
        out.append(f"    CL_FN_{fn['name']},\n")
    out.append('    CL_FN_COUNT\n};\n\n#endif\n')
    return ''.join(out)


def gen_table(fns):
    out = [HEADER, '#include <stddef.h>\n\n#include "store/calllog.h"\n\n']
    for fn in fns:
        if not fn['args']:
            continue
        out.append(f"static const struct cl_arg cl_args_{fn['name']}[] = {{\n")
        for a in fn['args']:
            flags = ' | '.join(f for f, on in (('CL_A_NOCMP', a['nocmp']), ('CL_A_KEEP', a['keep'])) if on) or '0'
            out.append(f"    {{\"{a['name']}\", \"{a['ctype']}\", {a['type']}, {ROLES[a['role']]}, "
                       f"{a['kind']}, {a['ptype']}, {flags}}},\n")
        out.append('};\n')
    out.append('\nconst struct cl_fn cl_fns[CL_FN_COUNT] = {\n')
    for fn in fns:
        flags = ' | '.join(FLAGS[f] for f in fn['flags']) or '0'
        args = f"cl_args_{fn['name']}" if fn['args'] else 'NULL'
        why = f'"{fn["why"]}"' if fn['why'] else 'NULL'
        out.append(f"    {{\"{fn['name']}\", {why}, {args}, {len(fn['args'])}, {ret_kind(fn)}, "
                   f"{ret_type(fn)}, {flags}}},\n")
    out.append('};\n')
    return ''.join(out)


def gen_impl_header(fns):
    out = [HEADER, '/* trnemu\'s implementations of the table\'s functions, defined in shims/\n'
           ' * as NAME_impl: the exported NAME is the recording wrapper\n'
           ' * (calllog_wrap_impl.c), which calls NAME_impl. */\n',
           '#pragma once\n', INCLUDES.replace('#include "store/calllog.h"\n', ''), '\n']
    for fn in fns:
        out.append(f"{fn['ret']} {fn['name']}_impl({params(fn)});\n")
    return ''.join(out)


def gen_wrapper(fn, mode):
    name, ret = fn['name'], fn['ret']
    n = len(fn['args'])
    lines = []
    if mode == 'impl':
        target = f'{name}_impl'
    else:
        lines.append(f"typedef {ret} (*cl_next_t_{name})({params(fn, names=False)});")
        lines.append(f"static {ret} cl_missing_{name}({params(fn)})")
        lines.append('{')
        lines.append(f'    cl_next_missing(CL_FN_{name});')
        lines.append(f'    {missing_return(fn)}')
        lines.append('}')
        target = (f'((cl_next_t_{name})cl_next_fn(CL_FN_{name}, '
                  f'(void (*)(void))cl_missing_{name}))')
    is_void = norm_type(ret) == 'void'
    call = f'{target}({call_args(fn)})'
    ret_kw = '' if is_void else 'return '
    # The recording path, out of line: the exported function stays a test
    # and a jump while nothing is recorded.
    lines.append(f"__attribute__((noinline, cold)) static {ret} cl_slow_{name}({params(fn)})")
    lines.append('{')
    argv = ', '.join(arg_value(a) for a in fn['args']) or '0'
    sizes = ', '.join(size_expr(a) if a['size'] else '0' for a in fn['args']) or '0'
    lines.append(f'    const uint64_t cl_argv[{max(n, 1)}] = {{{argv}}};')
    lines.append(f'    const uint64_t cl_sizes[{max(n, 1)}] = {{{sizes}}};')
    lines.append('    struct cl_call cl_c;')
    lines.append(f'    cl_call_begin(&cl_c, CL_FN_{name}, cl_argv, cl_sizes);')
    if is_void:
        lines.append(f'    {call};')
        lines.append('    cl_call_end(&cl_c, 0);')
    else:
        lines.append(f'    {ret} cl_r = {call};')
        lines.append(f"    cl_call_end(&cl_c, {ret_to_u64(fn, 'cl_r')});")
        lines.append('    return cl_r;')
    lines.append('}')
    lines.append(f"CL_EXPORT {ret} {name}({params(fn)})")
    lines.append('{')
    if 'init' in fn['flags']:
        lines.append('    cl_reconfigure();')
    lines.append('    if (__builtin_expect(cl_hooks_quiet(), 1))')
    lines.append(f'        {ret_kw}{call};')
    lines.append('    else')
    lines.append(f'        {ret_kw}cl_slow_{name}({call_args(fn)});')
    lines.append('}\n')
    return '\n'.join(lines)


def gen_wrappers(fns, mode):
    what = ('the exported entry points of libnrt.so.1: each calls trnemu\'s\n'
            ' * implementation (NAME_impl) directly while nothing is recorded, and\n'
            ' * records around the call otherwise.' if mode == 'impl' else
            'the exported entry points of libnrt-record.so: each forwards to\n'
            ' * the next library\'s function of the same name and records the call.')
    out = [HEADER, f'/*\n * {what}\n */\n', INCLUDES,
           '#include "calllog_impl.h"\n' if mode == 'impl' else '', '\n']
    for fn in fns:
        if mode == 'next' and 'notshim' in fn['flags']:
            continue
        out.append(gen_wrapper(fn, mode) + '\n')
    return ''.join(out)


def gen_map(fns):
    out = ['/* Generated by abi/gen_calllog.py: libnrt-record.so exports the wrapped\n'
           ' * Neuron Runtime functions and nothing else. */\n{\n  global:\n']
    for fn in fns:
        if 'notshim' not in fn['flags']:
            out.append(f"    {fn['name']};\n")
    out.append('  local:\n    *;\n};\n')
    return ''.join(out)


def check(fns, facts_path):
    with open(facts_path, encoding='utf-8') as f:
        facts = json.load(f)['functions']
    table = {fn['name']: fn for fn in fns}
    bad = []
    for name in sorted(set(facts) - set(table)):
        bad.append(f'{name}: exported by the ABI, missing from calls.def')
    for name, fact in sorted(facts.items()):
        fn = table.get(name)
        if fn is None:
            continue
        fret = re.sub(r'^#?endif\s+', '', fact['ret'].strip())  # a quirk of the facts file
        if norm_type(fret) != norm_type(fn['ret']):
            bad.append(f'{name}: returns {fact["ret"]}, table says {fn["ret"]}')
        fargs = [a.strip() for a in fact['args'].split(',') if a.strip() and a.strip() != 'void']
        if len(fargs) != len(fn['args']):
            bad.append(f'{name}: {len(fargs)} arguments, table has {len(fn["args"])}')
            continue
        for fa, ta in zip(fargs, fn['args']):
            m = re.match(r'^(.*?)([A-Za-z_]\w*)$', fa)
            ftype = norm_type(m.group(1)) if m else fa
            if ftype != norm_type(ta['ctype']):
                bad.append(f'{name}({ta["name"]}): type {fa}, table says {ta["ctype"]}')
    for name in sorted(set(table) - set(facts)):
        if not name.startswith('trnemu_'):
            bad.append(f'{name}: in calls.def but not an ABI function')
    for line in bad:
        print(line)
    print(f'calls.def: {len(table)} functions, {len(bad)} problems')
    return 1 if bad else 0


def main(argv):
    if len(argv) == 4 and argv[2] == '--check':
        return check(read_table(argv[1]), argv[3])
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    try:
        fns = read_table(argv[1])
    except TableError as e:
        sys.stderr.write(f'calls.def: {e}\n')
        return 1
    files = {
        'calllog_ids.h': gen_ids(fns),
        'calllog_table.c': gen_table(fns),
        'calllog_impl.h': gen_impl_header(fns),
        'calllog_wrap_impl.c': gen_wrappers(fns, 'impl'),
        'calllog_wrap_next.c': gen_wrappers(fns, 'next'),
        'libnrt-record.map': gen_map(fns),
    }
    for name, text in files.items():
        path = os.path.join(argv[2], name)
        old = None
        if os.path.exists(path):
            with open(path, encoding='utf-8') as f:
                old = f.read()
        if old != text:
            with open(path, 'w', encoding='utf-8') as f:
                f.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
