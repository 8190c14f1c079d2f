package io.vgpu.examples.lab;

import org.jspecify.annotations.Nullable;

/**
 * Kills what a lab started when the JVM is stopped (Ctrl-C, SIGTERM) before the lab could close it,
 * so no container or component outlives the lab.
 */
final class InterruptGuard implements AutoCloseable {
  private final Thread hook = new Thread(this::kill, "vgpu-lab-interrupted");
  private final LabWorkspace workspace;
  private volatile @Nullable LabCluster cluster;

  /** A guard of what a lab starts in {@code workspace}, which it removes too unless the user keeps it. */
  InterruptGuard(LabWorkspace workspace) {
    this.workspace = workspace;
    Runtime.getRuntime().addShutdownHook(hook);
  }

  void protect(LabCluster running) {
    this.cluster = running;
  }

  private void kill() {
    LabCluster c = cluster;
    if (c != null) {
      c.kill();
      c.close();
      workspace.close();
    }
  }

  @Override
  public void close() {
    cluster = null;
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // the JVM is shutting down: the hook runs
    }
  }
}
