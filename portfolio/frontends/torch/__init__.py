"""The PyTorch front end (issue 48): a module and a device mesh in, a sharding plan out."""
