"""Front ends: from a model to a problem, and from a plan back to the model.

Every other input of this project is a problem someone already built (a contest file, an XLA
request, Alpa's arrays). A front end builds it from a live model: :mod:`.torch` from a PyTorch
module and a device mesh, with DTensor's own sharding rules (docs/frontends.md). A front end is an
optional extra: nothing outside its own package imports its framework.
"""
