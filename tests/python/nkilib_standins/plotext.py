"""Stand-in for plotext (terminal plots), which Debian does not package:
the NKI Library suite draws histograms into its validation reports; here
they are empty (see README.md)."""


def clf():
    pass


def hist(data, bins=10, **kwargs):
    pass


def plotsize(width, height):
    pass


def ylim(lower=None, upper=None):
    pass


def xlim(lower=None, upper=None):
    pass


def vline(x, color=None):
    pass


def title(label):
    pass


def theme(name):
    pass


def build():
    return ""
