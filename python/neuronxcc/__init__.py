"""neuronxcc: the legacy package name; only neuronxcc.nki exists on trnemu."""
