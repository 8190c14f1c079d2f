package io.vgpu.k8s.scheduler;

/**
 * Whether this scheduler instance leads. Only the leader writes to the cluster and serves filter and
 * bind; followers report not-ready.
 */
public interface Leadership extends AutoCloseable {

  /** Whether this instance leads now. */
  boolean isLeader();

  /** Registers a callback run whenever this instance starts leading. */
  void onStartedLeading(Runnable callback);

  @Override
  default void close() {}

  /** Leadership for a single instance (leader election disabled): always the leader. */
  static Leadership always() {
    return new Leadership() {
      @Override
      public boolean isLeader() {
        return true;
      }

      @Override
      public void onStartedLeading(Runnable callback) {
        callback.run();
      }
    };
  }
}
