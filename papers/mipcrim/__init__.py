"""MiP-CRIM: "Local-Minima-Preserving Polynomial Relaxation of Ising Problems".

D. Banerjee, S. Mahapatra, K. N. Chaudhury (IISc Bangalore), ICML 2026 (PMLR 306), arXiv 2606.30333.

Modules: :mod:`.problems` (Ising couplings and energies), :mod:`.solver` (MiP-CRIM, Algorithm 1, and the adaptive
tuner), :mod:`.landscape` (brute-force landscape checks), :mod:`.baselines` (greedy, SA, ballistic SB, GW-SDP,
Karmarkar-Karp, LPT), :mod:`.gset` (G-set loader with canonical checksums).
"""
