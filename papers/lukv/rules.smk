# lukv has no data rules: every problem, task sample and model is generated from the root seed.
