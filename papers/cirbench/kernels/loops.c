/* Array loop kernels (written for this reproduction). */
int sum_arr(const int *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
int dot(const int *a, const int *b, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i] * b[i]; return s; }
void prefix_sum(int *a, int n) { for (int i = 1; i < n; i++) a[i] += a[i - 1]; }
void stencil3(const int *a, int *b, int n) { for (int i = 1; i + 1 < n; i++) b[i] = (a[i - 1] + 2 * a[i] + a[i + 1]) >> 2; }
int count_eq(const int *a, int n, int key) { int c = 0; for (int i = 0; i < n; i++) c += (a[i] == key); return c; }
int find_first(const int *a, int n, int key) { for (int i = 0; i < n; i++) if (a[i] == key) return i; return -1; }
int max_arr(const int *a, int n) { int m = a[0]; for (int i = 1; i < n; i++) if (a[i] > m) m = a[i]; return m; }
void hist16(const unsigned char *s, int *h, int n) { for (int i = 0; i < n; i++) h[s[i] & 15]++; }
int strscan(const unsigned char *s, int n) { int c = 0; for (int i = 0; i < n && s[i]; i++) c += (s[i] == 32); return c; }
void scale_add(int *a, const int *b, int n, int k) { for (int i = 0; i < n; i++) a[i] = a[i] * k + b[i]; }
void reverse(int *a, int n) { for (int i = 0, j = n - 1; i < j; i++, j--) { int t = a[i]; a[i] = a[j]; a[j] = t; } }
int count_runs(const int *a, int n) { int r = n > 0; for (int i = 1; i < n; i++) r += a[i] != a[i - 1]; return r; }
long long sum_sq64(const int *a, int n) { long long s = 0; for (int i = 0; i < n; i++) s += (long long)a[i] * a[i]; return s; }
int tri_sum(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * i; return s; }
void clamp_arr(int *a, int n, int lo, int hi) { for (int i = 0; i < n; i++) a[i] = a[i] < lo ? lo : (a[i] > hi ? hi : a[i]); }
int min_index(const int *a, int n) { int k = 0; for (int i = 1; i < n; i++) if (a[i] < a[k]) k = i; return k; }
int abs_sum(const int *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i] < 0 ? -a[i] : a[i]; return s; }
int byte_hash(const unsigned char *s, int n) { unsigned h = 2166136261u; for (int i = 0; i < n; i++) h = (h ^ s[i]) * 16777619u; return (int)(h >> 1); }
