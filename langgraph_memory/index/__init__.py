"""Chroma kept in step with the catalog: the change queue applied, checks on open, rebuilds.

The catalog holds every item and vector; Chroma is an approximate-nearest-neighbour index derived from
it and rebuilt from it when it is damaged, lost or out of step (`chroma.ChromaIndex`).
"""
