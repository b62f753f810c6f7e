"""Spark's own processes, started and tuned for the plugin: the JVM and its Python workers.

Owns how the Spark processes the plugin runs on start fast and end clean:
a fork server whose daemons start with pyspark, pyarrow and the scan
already loaded (``worker_forks``); the JVM's class-data archive of the
embedded server (``class_archive``); a warm start of the embedded server
with one small scan (``warm_up``); and the Python worker daemons Spark
leaves behind, stopped when their session ended or they idled
(``python_daemons``).

Spark's Python workers start through ``connect_plugin.worker_python`` (the
``connect-plugin-python`` command, which every install names by that
module), which ``worker_forks`` forks from: neither, nor this module, imports
anything else of the plugin. The others stand on the scan's public names
alone; the gateway and the command line use them.
"""
