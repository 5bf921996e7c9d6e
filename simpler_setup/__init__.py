"""The PyPTO ecosystem's tool namespace, kept for its command lines.

`python -m simpler_setup.tools.dump_viewer` is the name the precision-debugging guides
use for the tensor-dump viewer; it runs `pypto.tools.dump_viewer` (also `pypto
dump-viewer`).  Nothing else lives here.
"""
