"""K-means (lab 004 §2): the classic Northwestern codes' file formats and sequential algorithm,
a float64 reference, and the GPU ladder from host-side update to a fused device iteration."""
