"""Stand-in for the NKI Library's test/utils/perf_analysis_private.py,
which the public repository lacks: it analyses profiles taken on Trainium
hardware. run_nkilib.py copies this file into its temporary copy of the
suite when the module is missing there. Simulation runs take no hardware
profile, so there is nothing to analyse: analyze_trace does nothing."""


def analyze_trace(input_file=None, profiled_file=None, subgraph=None, base_dir=None,
                  output_filename=None, target_instance_family=None, **kwargs):
    """Would write a hardware profile's analysis; no profile exists here."""
    return None
