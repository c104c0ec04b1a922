"""cirbench: "CIRBench: Evaluating Large Language Models as LLVM IR Optimizers" (Yang et al., ICML 2026),
re-built offline: kernel corpus, four tracks, layered verifier / equivalence / performance harness."""
