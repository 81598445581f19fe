# ViT on CIFAR-10 (Figures 6 and 7): filled in by the ViT work.
