"""torch_compat.py: lets the NKI Library suite's torch references index
with int32 tensors on Debian 12's torch 1.13, which only takes long, byte
or bool index tensors (newer torch takes int32 too). Installed by
nkilib_plugin.py; it changes nothing on a torch that already takes them.
Not a change to trnemu or to what a test checks: the reference computes
the same values with the indices widened to int64."""

_NARROW = ()


def _widen(index):
    """index with its int32/int16 index tensors as int64 (inside tuples and
    lists too)."""
    import torch
    if isinstance(index, torch.Tensor) and index.dtype in _NARROW:
        return index.long()
    if isinstance(index, tuple):
        return tuple(_widen(i) for i in index)
    if isinstance(index, list) and any(isinstance(i, torch.Tensor) for i in index):
        return [_widen(i) for i in index]
    return index


def _needs_it(torch):
    """Whether this torch refuses an int32 index tensor."""
    try:
        torch.zeros(2)[torch.zeros(1, dtype=torch.int32)]
        return False
    except IndexError:
        return True


def install():
    """Widen narrow index tensors in Tensor.__getitem__/__setitem__ where
    torch refuses them. Returns True when installed."""
    global _NARROW
    try:
        import torch
    except ImportError:
        return False
    if getattr(torch.Tensor, "_trnemu_widened", False) or not _needs_it(torch):
        return False
    _NARROW = (torch.int32, torch.int16)
    get, put = torch.Tensor.__getitem__, torch.Tensor.__setitem__
    torch.Tensor.__getitem__ = lambda self, index: get(self, _widen(index))
    torch.Tensor.__setitem__ = lambda self, index, value: put(self, _widen(index), value)
    torch.Tensor._trnemu_widened = True
    return True
