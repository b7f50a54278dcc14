"""Adapters from other tools' formats: XLA's solver request and Alpa's serialized solver arguments.

``formats`` dispatches loading and saving by file name (``load_any``, ``read_any``, ``save_any``);
``xla`` reads and writes ``AutoShardingSolverRequest`` files (message declared in ``xla_proto``);
``request`` holds the request's arrays and their exact conversion to a :class:`Problem`;
``alpa`` is a drop-in for Alpa's ``_call_solver_serialized_args``. Protobuf and the runner are
imported only where used.
"""
