# dr_assortment: synthetic data only (generated inside the experiments from the root seed); no paper-specific rules.
