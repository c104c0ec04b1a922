/* Nested loop kernels (written for this reproduction). */
void matmul4(const int *a, const int *b, int *c) { for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) { int s = 0; for (int k = 0; k < 4; k++) s += a[4 * i + k] * b[4 * k + j]; c[4 * i + j] = s; } }
void bubble8(int *a) { for (int i = 0; i < 8; i++) for (int j = 0; j + 1 < 8 - i; j++) if (a[j] > a[j + 1]) { int t = a[j]; a[j] = a[j + 1]; a[j + 1] = t; } }
void insertion(int *a, int n) { for (int i = 1; i < n; i++) { int v = a[i], j = i - 1; while (j >= 0 && a[j] > v) { a[j + 1] = a[j]; j--; } a[j + 1] = v; } }
int count_pairs(const int *a, int n, int t) { int c = 0; for (int i = 0; i < n; i++) for (int j = i + 1; j < n; j++) c += a[i] + a[j] == t; return c; }
void transpose8(const int *a, int *b) { for (int i = 0; i < 8; i++) for (int j = 0; j < 8; j++) b[8 * j + i] = a[8 * i + j]; }
void blur2d(const int *a, int *b) { for (int i = 1; i < 7; i++) for (int j = 1; j < 7; j++) b[8 * i + j] = (a[8 * i + j - 1] + a[8 * i + j + 1] + a[8 * (i - 1) + j] + a[8 * (i + 1) + j]) >> 2; }
