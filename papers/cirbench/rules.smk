# cirbench has no data rules: the kernel corpus is committed C source compiled inside the experiments.
