package io.vgpu.bench.placement;

import io.vgpu.api.spi.PlacementView;

/** A pod's candidate placement on one simulated node, as the policies score it; reused per run. */
final class SimPlacement implements PlacementView {
  private final int[] gpus = new int[64];
  private int count;
  private int memoryMiB;
  private int cores;
  private long cpuMilli;

  /** Sets the pod; the GPUs are added with {@link #add}. */
  SimPlacement reset(TracePod pod) {
    count = 0;
    memoryMiB = pod.gpuMilli() * SimCluster.MIB_PER_MILLI;
    cores = SimCluster.coresOf(pod.gpuMilli());
    cpuMilli = pod.cpuMilli();
    return this;
  }

  void add(int gpu) {
    gpus[count++] = gpu;
  }

  /** The GPU positions chosen so far. */
  int[] gpus() {
    return gpus;
  }

  @Override
  public int containers() {
    return count == 0 ? 0 : 1;
  }

  @Override
  public int cardCount(int c) {
    return count;
  }

  @Override
  public int card(int c, int i) {
    return gpus[i];
  }

  @Override
  public int memoryMiB(int c, int i) {
    return memoryMiB;
  }

  @Override
  public int cores(int c, int i) {
    return cores;
  }

  @Override
  public long cpuMilli() {
    return cpuMilli;
  }
}
