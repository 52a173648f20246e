"""The fabric as a graph: paths, reachability, failure domains, blast radius, drawing.

Everything here is pure Python over a `FabricGraph` except `fabric.topology.load`, which is
the one module that reads the database (decisions without I/O stay without it). See
docs/topology.md for the model.
"""
