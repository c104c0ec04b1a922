# hosfl has no paper-specific rules: Digits ships with scikit-learn and everything else is generated inside the experiments.
