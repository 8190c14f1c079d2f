package io.vgpu.core.policy;

/** Orders a node's cards by a per-card key, the way the policies here rank them for the fit walk. */
final class CardOrder {
  private static final ThreadLocal<double[]> KEYS = ThreadLocal.withInitial(() -> new double[16]);

  private CardOrder() {}

  /** A thread-local scratch array for {@code n} keys. */
  static double[] keys(int n) {
    double[] keys = KEYS.get();
    if (keys.length < n) {
      keys = new double[Math.max(n, keys.length * 2)];
      KEYS.set(keys);
    }
    return keys;
  }

  /**
   * Writes into {@code order[0..n)} the positions {@code 0..n-1} sorted by decreasing key, lower
   * position first among equal keys. Insertion sort: n is a node's card count, and it allocates nothing.
   */
  static void byDecreasingKey(double[] keys, int n, int[] order) {
    for (int i = 0; i < n; i++) {
      int current = i;
      int j = i - 1;
      while (j >= 0 && keys[order[j]] < keys[current]) {
        order[j + 1] = order[j];
        j--;
      }
      order[j + 1] = current;
    }
  }
}
