"""nki.collectives: collectives between ranks on trnemu's ISA (docs/isa.md
"Between cores"). A rank is one process of a job started by `trnemu launch
-n N` (RANK and WORLD_SIZE in the environment; without them the process is
rank 0 of 1); a kernel that uses a collective is loaded with
nrt_load_collectives as that rank. trnemu's collective instructions run
over every rank of the job (replica group 0): a ReplicaGroup of the one
rank-list of all ranks (in rank order where the order places the parts)
is one instruction. Rank-lists that split the job (each rank in exactly
one) or order it otherwise (all_gather, all_reduce, reduce_scatter,
all_to_all) bring every member's block to each rank, which takes them, or
folds them in the list's order: lists that split the job into lists of one
length by len(list) - 1 steps of permutes within the lists, others by a
whole-job all_gather into an HBM buffer;
the implicit (ring) permutes are a permute between each rank's neighbours
in its own list. The _v forms take only [[0, ..., N-1]]"""
import operator
import os
from enum import Enum

from ._core import NkiTensor, current, fail
from .isa._helpers import _alu


class rg_partition_op(Enum):
    """How ReplicaGroup.from_partition_op groups ranks: rank-list id =
    op(rank, operand)."""
    bitwise_and = 0
    div = 1
    mod = 2


class ReplicaGroup:
    """The ranks a collective runs on, as a list of disjoint rank-lists."""

    def __init__(self, replica_groups):
        groups = [[int(r) for r in g] for g in replica_groups]
        seen = [r for g in groups for r in g]
        if len(seen) != len(set(seen)):
            raise ValueError("a rank appears in two rank-lists of %r" % (groups,))
        self.replica_groups = groups     # list of rank-lists

    @staticmethod
    def from_partition_op(world_size, op, operand):
        """Ranks 0..world_size-1 grouped by op(rank, operand)."""
        key = {rg_partition_op.bitwise_and: lambda r: r & operand,
               rg_partition_op.div: lambda r: r // operand,
               rg_partition_op.mod: lambda r: r % operand}[op]
        groups = {}
        for r in range(world_size):
            groups.setdefault(key(r), []).append(r)
        return ReplicaGroup([groups[k] for k in sorted(groups)])

    def __repr__(self):
        return "ReplicaGroup(%r)" % (self.replica_groups,)

    def __eq__(self, other):
        return isinstance(other, ReplicaGroup) and other.replica_groups == self.replica_groups

    def __hash__(self):
        return hash(repr(self))


def world():
    """(rank, number of ranks) of this process: RANK and WORLD_SIZE, as
    `trnemu launch` sets them, else (0, 1)."""
    try:
        n = int(os.environ.get("WORLD_SIZE", "1"))
        r = int(os.environ.get("RANK", "0"))
    except ValueError:
        fail("RANK=%r / WORLD_SIZE=%r are not integers"
             % (os.environ.get("RANK"), os.environ.get("WORLD_SIZE")))
    if not 0 <= r < n:
        fail("RANK=%d is outside WORLD_SIZE=%d" % (r, n))
    return r, n


class RankId(int):
    """What rank_id() gives: this rank's number, known while tracing (each
    rank traces its own program), where the vendor's gives a register
    holding it. It is an int everywhere; like that register it is also
    taken as an access pattern's scalar_offset."""


def rank_id(name=None):
    """This process's rank (an integer known while tracing): the traced
    program then differs from rank to rank (never shared on disk)."""
    current().rank_dependent = True
    return RankId(world()[0])


def _rank_lists(replica_group):
    return replica_group.replica_groups if isinstance(replica_group, ReplicaGroup) else \
        [[int(r) for r in g] for g in replica_group]


def _refuse_group(groups, n, what, split=True):
    """NKIError for a group trnemu cannot run. split: the operation takes
    rank-lists that split the job (each rank in exactly one of them)."""
    ranks = sorted(r for g in groups for r in g)
    if n == 1 and len(ranks) > 1 and ranks == list(range(len(ranks))):
        fail("replica group %r names %d ranks, but this process is rank 0 of 1: run the kernel "
             "on %d ranks (trnemu launch -n %d, or kernel.ranks() / nki.cpu_simulate(kernel)"
             "[lnc].ranks() with one input per rank)" % (groups, len(ranks), len(ranks), len(ranks)))
    if split:
        fail("replica group %r: the rank-lists of trnemu's %s together hold every rank of the "
             "job (0..%d) exactly once" % (groups, what, n - 1))
    fail("replica group %r: trnemu's %s runs over all %d ranks of the job as one rank-list "
         "([[0, ..., %d]]); rank-lists that split the job need a replica-group table, which "
         "trnemu's NEFFs do not carry" % (groups, what, n, n - 1))


def _group(replica_group, what):
    """ISA group 0 (all ranks, in rank order): the only group the _v forms
    take (their metadata rows follow the ranks' order)."""
    _, n = world()
    groups = _rank_lists(replica_group)
    if groups == [list(range(n))]:
        return 0
    if [sorted(g) for g in groups] == [list(range(n))]:
        fail("replica group %r: %s gives part j to the rank-list's j-th rank; trnemu's runs "
             "over the ranks in their order ([[0, ..., %d]])" % (groups, what, n - 1))
    _refuse_group(groups, n, what, split=False)


def _members(replica_group, what="all_gather"):
    """The rank-list this rank belongs to, in its order, when the lists
    split the job's ranks (every rank in exactly one); else NKIError."""
    me, n = world()
    groups = _rank_lists(replica_group)
    if sorted(r for g in groups for r in g) != list(range(n)):
        _refuse_group(groups, n, what)
    return next(g for g in groups if me in g)


def _pairs(srcs, dsts, what):
    srcs = list(srcs) if isinstance(srcs, (list, tuple)) else [srcs]
    dsts = list(dsts) if isinstance(dsts, (list, tuple)) else [dsts]
    if len(srcs) != len(dsts) or not srcs:
        fail("%s takes lists of as many sources as destinations (%d and %d)"
             % (what, len(srcs), len(dsts)))
    for t in srcs + dsts:
        if not isinstance(t, NkiTensor):
            fail("%s takes tensors, got %r" % (what, t))
    kinds = set(t.storage.kind == "hbm" for t in srcs + dsts)
    if len(kinds) > 1:
        fail("%s: the tensors are all in HBM or all in SBUF" % what)
    return list(zip(srcs, dsts))


def _dim0(collective_dim, what):
    if collective_dim != 0:
        fail("%s: collective_dim=%r; ranks' data is joined and split along dimension 0 (an "
             "all_gather of SBUF tiles also takes 1)" % (what, collective_dim))


def _op(op):
    a = _alu(op)
    if a not in ("add", "max", "min"):
        fail("a collective reduces with nl.add, nl.maximum or nl.minimum, got %r" % (op,))
    return a


def _emit(op, src, dst, args, extra_ins=None):
    tr = current()
    tr.collectives = True
    ins = {"src": src}
    ins.update(extra_ins or {})
    tr.emit("sp", op, {"dst": dst}, ins, [("dst", dst), ("src", src)] + args)


def all_reduce(srcs, dsts, replica_group, op, priority=None, name=None):
    """dst = op over the src of every rank of this rank's rank-list,
    element by element."""
    a = _op(op)
    pairs = _pairs(srcs, dsts, "all_reduce")
    if _whole_job(replica_group, ordered=False):
        for s, d in pairs:
            _emit("all_reduce", s, d, [("group", 0), ("op", a)])
        return
    members = _members(replica_group, "all_reduce")
    for s, d in pairs:
        _same_size(s, d, 1, "all_reduce")
        _fold(d, _list_blocks(s, replica_group, members, _whole), op)


def _whole_job(replica_group, ordered):
    """Whether the group is the one rank-list of every rank (in rank order
    when ordered): then the ISA's collective over group 0 is it."""
    n = world()[1]
    groups = _rank_lists(replica_group)
    return groups == [list(range(n))] or not ordered and len(groups) == 1 and \
        sorted(groups[0]) == list(range(n))


def _same_size(src, dst, ratio, what):
    """dst holds src's elements times ratio (a fraction for reduce_scatter)."""
    if dst.size != src.size * ratio or src.dtype != dst.dtype:
        fail("%s: dst (%s %s) holds %g times the elements of src (%s %s), in its dtype"
             % (what, tuple(dst.shape), dst.dtype, ratio, tuple(src.shape), src.dtype))


def _gather_all(src):
    """Every rank's src, in rank order, in an HBM buffer [ranks, *src.shape]
    (one all_gather over the whole job)."""
    from . import language as nl
    n = world()[1]
    joined = nl.ndarray((n,) + tuple(src.shape), dtype=src.dtype, buffer=nl.hbm)
    _emit("all_gather", src, joined, [("group", 0)])
    return joined


def _whole(t, j):
    """What a rank sends the list's j-th rank when each gets all of it."""
    return t


def _list_blocks(src, replica_group, members, send_view):
    """What each rank of this rank's rank-list (members, in list order)
    has for this rank, in list order, in HBM buffers: member m's
    send_view(src, i), i this rank's place in the list. When the lists
    split the job into lists of one length, len(members) - 1 steps of
    permutes within the lists move it, each rank sending the next one of
    its list a step further on its part for that rank (about one block a
    rank, where a whole-job gather moves one per rank of the job);
    otherwise one whole-job all_gather does."""
    from . import language as nl
    from .isa import dma_copy
    me, n = world()
    k, i = len(members), members.index(me)
    if k == n or len({len(g) for g in _rank_lists(replica_group)}) != 1:
        joined = _gather_all(src)
        return [send_view(joined[m], i) for m in members]
    out = [None] * k
    for step in range(k):
        to, frm = (i + step) % k, (i - step) % k
        part = send_view(src, to)
        buf = nl.ndarray(tuple(part.shape), dtype=part.dtype, buffer=nl.hbm)
        if step == 0:
            dma_copy(dst=buf, src=part)      # this rank's own part, apart from dst
        else:
            _emit("permute", part, buf, [("group", 0), ("send_to", members[to]),
                                         ("recv_from", members[frm])])
        out[frm] = buf
    return out


def _fold(dst, parts, op):
    """dst = op(...op(op(parts[0], parts[1]), parts[2])..., parts[-1]),
    left to right in the list's order, each step one DMA that combines in
    the dtype (dst = op(dst, part))."""
    from .isa import dma_copy
    dma_copy(dst=dst, src=parts[0])
    for p in parts[1:]:
        dma_copy(dst=dst, src=p, dst_rmw_op=op)


def _split0(t, k, what):
    """t's k equal parts along dimension 0."""
    rows = t.shape[0]
    if rows % k:
        fail("%s: dimension 0 of %s (%d) does not split into %d equal parts, one per rank of "
             "the rank-list" % (what, tuple(t.shape), rows, k))
    step = rows // k
    return [t[j * step:(j + 1) * step] for j in range(k)]


def all_gather(srcs, dsts, replica_group, collective_dim=0, priority=None, name=None):
    """dst = the src of every rank of this rank's rank-list, joined in the
    list's order along dimension 0 (or 1, for 2-D SBUF tiles)."""
    members = _members(replica_group)
    pairs = _pairs(srcs, dsts, "all_gather")
    if collective_dim not in (0, 1) or collective_dim == 1 and pairs[0][0].storage.kind == "hbm":
        _dim0(collective_dim, "all_gather")
    if collective_dim == 0 and members == list(range(world()[1])):
        for s, d in pairs:
            _emit("all_gather", s, d, [("group", 0)])
        return
    for s, d in pairs:
        _gather_blocks(s, d, collective_dim, members, replica_group)


def _gather_blocks(src, dst, dim, members, replica_group):
    """all_gather through HBM buffers: every member's src (_list_blocks),
    then member j's block copied into block j of dst along dim. For a
    rank-list that is part of the job's ranks, for one that lists them in
    another order, and for dimension 1 of SBUF tiles."""
    from .isa import dma_copy
    shape = tuple(src.shape)
    if dim == 1 and (len(shape) != 2 or len(dst.shape) != 2):
        fail("all_gather along dimension 1 takes 2-D SBUF tiles (a partition and one free "
             "dimension), got %s and %s" % (shape, tuple(dst.shape)))
    want = list(shape)
    want[dim] *= len(members)
    if list(dst.shape) != want:
        fail("all_gather of rank-list %r along dimension %d: dst is %s, should be %s"
             % (members, dim, tuple(dst.shape), tuple(want)))
    blocks = _list_blocks(src, replica_group, members, _whole)
    step = shape[dim]
    for j, b in enumerate(blocks):
        block = [slice(None)] * len(shape)
        block[dim] = slice(j * step, (j + 1) * step)
        dma_copy(dst=dst[tuple(block)], src=b)


def reduce_scatter(srcs, dsts, replica_group, collective_dim=0, op=None, priority=None, name=None):
    """op over the src of every rank of this rank's rank-list, split along
    dimension 0: part j to the list's j-th rank."""
    a = _op(op)
    _dim0(collective_dim, "reduce_scatter")
    pairs = _pairs(srcs, dsts, "reduce_scatter")
    if _whole_job(replica_group, ordered=True):
        for s, d in pairs:
            _emit("reduce_scatter", s, d, [("group", 0), ("op", a)])
        return
    members = _members(replica_group, "reduce_scatter")
    k = len(members)
    for s, d in pairs:
        _same_size(s, d, 1.0 / k, "reduce_scatter")
        _fold(d, _list_blocks(s, replica_group, members,
                              lambda t, j: _split0(t, k, "reduce_scatter")[j]), op)


def all_to_all(srcs, dsts, replica_group, collective_dim=0, priority=None, name=None):
    """Part j of src (along dimension 0) goes to the rank-list's j-th rank,
    which keeps it as part i (the sender's place in the list) of its dst."""
    _dim0(collective_dim, "all_to_all")
    pairs = _pairs(srcs, dsts, "all_to_all")
    if _whole_job(replica_group, ordered=True):
        for s, d in pairs:
            _emit("all_to_all", s, d, [("group", 0)])
        return
    from .isa import dma_copy
    members = _members(replica_group, "all_to_all")
    k = len(members)
    for s, d in pairs:
        _same_size(s, d, 1, "all_to_all")
        slots = _split0(d, k, "all_to_all")
        parts = _list_blocks(s, replica_group, members,
                             lambda t, j: _split0(t, k, "all_to_all")[j])
        for i, p in enumerate(parts):
            dma_copy(dst=slots[i], src=p)


def _variable(op, srcs, dsts, replica_group, metadata_tensor, recv_counts_known, has_rdispls):
    g = _group(replica_group, op)
    if not isinstance(metadata_tensor, NkiTensor):
        fail("%s needs a metadata tensor" % op)
    for s, d in _pairs(srcs, dsts, op):
        args = [("metadata", metadata_tensor), ("group", g)]
        if recv_counts_known:
            args.append(("recv_counts_known", None))
        if has_rdispls:
            args.append(("has_rdispls", None))
        tr = current()
        tr.collectives = True
        # metadata rows 2.. are written back and dst keeps what no chunk covers
        tr.emit("sp", op, {"dst": d, "metadata": metadata_tensor}, {"src": s},
                [("dst", d), ("src", s)] + args, rmw=True)


def all_to_all_v(srcs, dsts, replica_group, metadata_tensor, recv_counts_known=False,
                 has_rdispls=False, priority=None, name=None):
    """All-to-all of counts known at run time (metadata rows: send counts,
    send displacements, receive counts, receive displacements)."""
    _variable("all_to_all_v", srcs, dsts, replica_group, metadata_tensor, recv_counts_known,
              has_rdispls)


def all_gather_v(srcs, dsts, replica_group, metadata_tensor, recv_counts_known=False,
                 has_rdispls=False, priority=None, name=None):
    """All-gather of one chunk per rank whose size is known at run time."""
    _variable("all_gather_v", srcs, dsts, replica_group, metadata_tensor, recv_counts_known,
              has_rdispls)


def collective_permute(srcs, dsts, source_target_pairs, priority=None, name=None):
    """Send src to the rank this one targets in source_target_pairs and
    receive into dst from the rank that targets this one."""
    me, n = world()
    pairs = [(int(s), int(t)) for s, t in source_target_pairs]
    send = [t for s, t in pairs if s == me]
    recv = [s for s, t in pairs if t == me]
    if len(send) != 1 or len(recv) != 1:
        fail("collective_permute: rank %d must appear once as a source and once as a target "
             "in %r" % (me, pairs))
    if not (0 <= send[0] < n and 0 <= recv[0] < n):
        fail("collective_permute pairs %r name ranks outside 0..%d" % (pairs, n - 1))
    for s, d in _pairs(srcs, dsts, "collective_permute"):
        _emit("permute", s, d, [("group", 0), ("send_to", send[0]), ("recv_from", recv[0])])


# ------------------------------------------------ ring (implicit) permutes
#
# The vendor's implicit permutes let the hardware work out each rank's ring
# partners. On trnemu each rank traces its own program, so its rank-list
# and its place in it are known while tracing: the ring step is trnemu's
# explicit permute to the next rank of the list, from the previous one.

def _ring(replica_group, what):
    """(this rank's rank-list in its order, this rank's place in it). The
    rank-lists are of one length: each ring step is one permute of the
    whole job, so the ranks of a shorter list would stop stepping while
    the others wait for them."""
    sizes = sorted({len(g) for g in _rank_lists(replica_group)})
    if len(sizes) > 1:
        fail("%s: the rank-lists of replica group %r are of different lengths (%s); a ring "
             "steps all of them together, so they are of one length"
             % (what, _rank_lists(replica_group), ", ".join(map(str, sizes))))
    members = _members(replica_group, what)
    return members, members.index(world()[0])


def _max_channels(replica_group):
    """4 channels for a group of one rank-list holding the whole job (the
    vendor's whole-node group), 2 for any other."""
    groups = _rank_lists(replica_group)
    return 4 if len(groups) == 1 and sorted(groups[0]) == list(range(world()[1])) else 2


def _channels(lists, channel_ids, replica_group, what):
    """One tensor per channel from each *_by_channel argument (all of the
    same length), after checking channel_ids against them."""
    ids = list(channel_ids) if isinstance(channel_ids, (list, tuple)) else None
    if ids is None or ids != list(range(len(ids))) or not ids:
        fail("%s: channel_ids=%r; they are consecutive integers from 0 ([0], [0, 1], ...)"
             % (what, channel_ids))
    top = _max_channels(replica_group)
    if len(ids) > top:
        fail("%s: %d channels; replica group %r has at most %d (4 for one rank-list of the "
             "whole job, 2 otherwise)" % (what, len(ids), _rank_lists(replica_group), top))
    out = []
    for name, by_channel in lists:
        if not isinstance(by_channel, (list, tuple)) or len(by_channel) != len(ids):
            fail("%s: %s has one list per channel (%d channels), got %r"
                 % (what, name, len(ids), by_channel))
        row = []
        for c, inner in enumerate(by_channel):
            if not isinstance(inner, (list, tuple)) or len(inner) != 1:
                fail("%s: %s[%d] is a list of exactly one tensor, got %r" % (what, name, c, inner))
            row.append(inner[0])
        out.append(row)
    return out


def _ring_step(srcs, dsts, replica_group, what):
    """Each src to this rank's successor in its rank-list, each dst from
    its predecessor: trnemu's permute with both partners named."""
    members, pos = _ring(replica_group, what)
    nxt, prv = members[(pos + 1) % len(members)], members[(pos - 1) % len(members)]
    for s, d in _pairs(srcs, dsts, what):
        _emit("permute", s, d, [("group", 0), ("send_to", nxt), ("recv_from", prv)])


def collective_permute_implicit(srcs_by_channel, dsts_by_channel, replica_group, channel_ids=[0],
                                priority=None, name=None):
    """One ring step per channel: send src to the next rank of this rank's
    rank-list (the first after the last) and receive into dst from the one
    before it."""
    what = "collective_permute_implicit"
    srcs, dsts = _channels([("srcs_by_channel", srcs_by_channel),
                            ("dsts_by_channel", dsts_by_channel)], channel_ids, replica_group, what)
    _ring_step(srcs, dsts, replica_group, what)


def _combine(a, b, op, what):
    """op(a, b) element by element into a new tensor in a's memory: a copy
    of a, then a DMA that folds b into it (dst = op(dst, src))."""
    from . import language as nl
    from .isa import dma_copy
    if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
        fail("%s: srcs0 and srcs1 of a channel have the same shape and dtype (%s %s and %s %s)"
             % (what, tuple(a.shape), a.dtype, tuple(b.shape), b.dtype))
    buf = nl.hbm if a.storage.kind == "hbm" else nl.sbuf
    out = nl.ndarray(tuple(a.shape), dtype=a.dtype, buffer=buf)
    dma_copy(dst=out, src=a)
    dma_copy(dst=out, src=b, dst_rmw_op=op)
    return out


def collective_permute_implicit_reduce(srcs0_by_channel, srcs1_by_channel, dsts_by_channel,
                                       replica_group, op, channel_ids=[0], priority=None,
                                       name=None):
    """A ring step that sends op(srcs0, srcs1) (nl.add, nl.maximum or
    nl.minimum, computed on this rank first) to the next rank of the
    rank-list and receives the previous rank's into dst."""
    what = "collective_permute_implicit_reduce"
    _op(op)
    s0, s1, dsts = _channels([("srcs0_by_channel", srcs0_by_channel),
                              ("srcs1_by_channel", srcs1_by_channel),
                              ("dsts_by_channel", dsts_by_channel)], channel_ids, replica_group,
                             what)
    _pairs(s0 + s1, dsts + dsts, what)      # tensors, all in HBM or all on chip
    sent = [_combine(a, b, op, what) for a, b in zip(s0, s1)]
    _ring_step(sent, dsts, replica_group, what)


def collective_permute_implicit_current_processing_rank_id(iteration_id, replica_group,
                                                           channel_id=0, name=None):
    """The rank whose data this rank holds at ring step iteration_id: its
    own at 0, its predecessor's at 1, and so on around its rank-list.
    A Python integer step gives an integer (like rank_id()); a register or
    a device loop's index gives a register computed on the device."""
    what = "collective_permute_implicit_current_processing_rank_id"
    members, pos = _ring(replica_group, what)
    if not isinstance(channel_id, int) or not 0 <= channel_id < _max_channels(replica_group):
        fail("%s: channel_id=%r is not a channel of replica group %r (0..%d)"
             % (what, channel_id, _rank_lists(replica_group), _max_channels(replica_group) - 1))
    current().rank_dependent = True
    n = len(members)
    step = _integer(iteration_id)
    if step is not None:
        return RankId(members[(pos - step) % n])
    return _rank_register(iteration_id, [members[(pos - k) % n] for k in range(n)], what)


def _integer(v):
    """v as a Python integer when it is one known while tracing (an int,
    a NumPy integer), else None (a register, a device loop's index)."""
    if isinstance(v, bool) or type(v).__name__ in ("VirtualRegister", "LoopIndex"):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def _rank_register(step, ranks, what):
    """A GpSimd register holding ranks[step mod len(ranks)], step being a
    register or a device loop's index: the step is brought into 0..n-1,
    then the rank is picked by a sum of (step == k) * ranks[k] (register
    ALU operations only, no table in memory)."""
    from ._core.loops import REG_COUNTER, LoopIndex
    from .isa._registers import VirtualRegister, register_alloc, _ENGINE
    if isinstance(step, VirtualRegister):
        rs = step.number
    elif isinstance(step, LoopIndex):
        rs = REG_COUNTER        # the device loop's counter on every engine in it
    else:
        fail("%s: iteration_id is an integer, a register or a device loop's index, got %r"
             % (what, step))
    n = len(ranks)
    out, tmp = register_alloc(), register_alloc()
    tr = current()

    def alu(rd, rs_, op, imm=None, rt=None):
        args = [("rd", rd), ("rs", rs_), ("op", op)]
        args += [("rt", rt)] if rt is not None else [("imm", imm)]
        tr.emit(_ENGINE, "reg_alu", {}, {}, args)

    k = tmp.number
    alu(k, rs, "mod", n)             # C-style remainder: -(n-1)..n-1
    alu(k, k, "add", n)
    alu(k, k, "mod", n)              # 0..n-1
    tr.emit(_ENGINE, "reg_move", {}, {}, [("rd", out.number), ("value", ranks[0])])
    scratch = register_alloc() if n > 1 else None
    for j in range(1, n):
        if ranks[j] == ranks[0]:
            continue
        alu(scratch.number, k, "equal", j)
        alu(scratch.number, scratch.number, "multiply", ranks[j] - ranks[0])
        alu(out.number, out.number, "add", rt=scratch.number)
    return out
