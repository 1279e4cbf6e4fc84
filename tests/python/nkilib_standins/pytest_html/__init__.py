"""Stand-in for pytest-html, which Debian does not package: the NKI
Library suite only adds links to its HTML report (see ../README.md)."""
