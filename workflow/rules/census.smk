# Convergence census (Figures 9 and 10): filled in by the census work.
