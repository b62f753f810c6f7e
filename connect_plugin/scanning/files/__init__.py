"""Where a scan's files are and which ones it reads.

Owns the file systems a scan reads from and their secret options
(``storage``), and the listing of a scan's paths into ``ScanFile``s, each
with its scan root, in a fixed order, split into Spark partitions balanced by
bytes (``files``).

Beside the loader on the floor of the scan: formats read the files listed
here, the planner lists them, and none of that is known here.

Imports from the scan: nothing.
"""
