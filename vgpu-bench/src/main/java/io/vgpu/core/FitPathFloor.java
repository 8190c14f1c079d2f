package io.vgpu.core;

/**
 * The floor under the engine's filter: one tight pass over the very per-device arrays {@link
 * Engine#filter} scans, reading every field its fit test reads (flags, sharers, split count, total and
 * used memory, total and used compute, type), once. A benchmark-only window into the engine: it lives
 * in vgpu-bench, in the engine's package, so the engine exposes nothing public for it.
 */
public final class FitPathFloor {
  /** Fields per device the fit test reads. */
  public static final int FIELDS_READ = 8;

  private final int[][] devices;
  private final long deviceCount;

  private FitPathFloor(int[][] devices, long deviceCount) {
    this.devices = devices;
    this.deviceCount = deviceCount;
  }

  /** The floor over the engine's current node snapshots, in registration order. */
  public static FitPathFloor of(Engine engine) {
    NodeState[] states = engine.snapshots();
    int[][] devices = new int[states.length][];
    long count = 0;
    for (int i = 0; i < states.length; i++) {
      devices[i] = states[i].data;
      count += states[i].deviceCount;
    }
    return new FitPathFloor(devices, count);
  }

  /** Reads every fit-relevant field of every device once and folds them into one value. */
  public long scan() {
    long fold = 0;
    for (int[] data : devices) {
      for (int base = 0; base < data.length; base += NodeState.STRIDE) {
        fold += data[base + NodeState.FLAGS]
            ^ data[base + NodeState.SHARERS]
            ^ data[base + NodeState.SPLIT]
            ^ data[base + NodeState.TOTAL_MEM]
            ^ data[base + NodeState.USED_MEM]
            ^ data[base + NodeState.TOTAL_CORES]
            ^ data[base + NodeState.USED_CORES]
            ^ data[base + NodeState.TYPE];
      }
    }
    return fold;
  }

  /** Bytes one {@link #scan} reads: 4 per field read, {@link #FIELDS_READ} per device. */
  public long bytesPerScan() {
    return deviceCount * FIELDS_READ * Integer.BYTES;
  }
}
