"""The matrix-move kit: ldmatrix, stmatrix and movmatrix, which address, lane and register
each element comes from and goes to."""
