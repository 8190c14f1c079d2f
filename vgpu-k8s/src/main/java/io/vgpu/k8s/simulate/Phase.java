package io.vgpu.k8s.simulate;

/** Where a simulated pod ended up. */
public enum Phase {
  /** Placed on a node (with its devices). */
  RUNNING("Running"),
  /** Admitted but not placed: it fits nowhere yet, or the scheduler cannot evaluate it. */
  PENDING("Pending"),
  /** Denied by the admission webhook. */
  REJECTED("Rejected");

  private final String word;

  Phase(String word) {
    this.word = word;
  }

  /** The phase as Kubernetes writes it, e.g. {@code Running}. */
  public String word() {
    return word;
  }
}
