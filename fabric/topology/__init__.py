"""The fabric as a graph: paths, reachability, failure domains, blast radius, drawing.

Everything here is pure Python over a `FabricGraph` except `fabric.topology.load`, which is
the one module that reads the database (STYLE §4: decisions with no I/O). See
docs/topology.md for the model.
"""
