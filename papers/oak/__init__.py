"""oak: the Optimizer Aware Kernel (OAK), an Adam-preconditioned neural tangent kernel for fine-tuning.

Reconstruction of the ICML 2026 paper that introduces the "Optimizer Aware Kernel" (title, authors and arXiv id
not located), building on Malladi et al., "A Kernel-Based View of Language Model Fine-Tuning", ICML 2023.
"""
