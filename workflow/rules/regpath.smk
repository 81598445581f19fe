# Regularization paths (Theorems 1, 5, 6) and the Lemma 1 check.
