"""A GPU session (docs/gpu.md): one allocation of an offline GPU node, from its checks to what it brings back.

``python -m maxmargin.gpu OUT_DIR [MINUTES]``, run by tools/gpu_session.sh from the repository's root. Its modules,
by what they do:

- :mod:`~maxmargin.gpu.request`: the arguments, settings, OUT_DIR, the data and the config, checked before any work
  (a refusal names the fix), and the exit statuses;
- :mod:`~maxmargin.gpu.kit`: the kit's wheels installed on the node; :mod:`~maxmargin.gpu.kit_build`: the kit built
  here (``make gpu-kit``: ``python -m maxmargin.gpu.kit_build``);
- :mod:`~maxmargin.gpu.record`: the session's record (its clock, session.log, session.json, the files it brings
  back) and the commands it runs; :mod:`~maxmargin.gpu.processes`: process trees found and stopped whole;
- :mod:`~maxmargin.gpu.plan`: the run planned, by the measured figures or a pilot;
- :mod:`~maxmargin.gpu.watch`: the rule logs read while a stage runs (projections; what the training job did);
- :mod:`~maxmargin.gpu.judge`: whether a file is of the planned run; :mod:`~maxmargin.gpu.salvage`: a cut or stopped
  run's epochs, from its checkpoint;
- :mod:`~maxmargin.gpu.paths`: the files it reads and brings back, from the registry where it declares them;
- :mod:`~maxmargin.gpu.device`: the device's numbers; :mod:`~maxmargin.gpu.stages`: the stages, each a Snakemake
  run of the pipeline's own rules; :mod:`~maxmargin.gpu.session`: the session from its checks to its end.

What the session imports before the kit's wheels are installed is the standard library and the package's plain
modules only (the node has no Snakemake, pandera or PyYAML before the kit: tests/test_gpu_package.py).
"""
