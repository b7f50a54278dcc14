"""File formats: this project's JSON and other tools' problems, behind one registry.

``formats`` is the registry, the one place that knows formats (``register``, ``read_any``,
``save_any``, ``convert``); every reader returns a ``conversion.Conversion`` (the problem, and the map
of plans and costs back to the file). The formats: ``json_formats`` (contest and extended JSON),
``xla`` (XLA's ``AutoShardingSolverRequest``, message declared in ``xla_proto``, binary or text, copied
field for field between the two); ``request`` holds a request's arrays and their exact conversion to a
:class:`Problem`, shared with ``alpa``, a drop-in for Alpa's ``_call_solver_serialized_args``.
Protobuf and the runner are imported only where used.
"""
