package io.vgpu.core.queue;

/** A resource a queue divides, in KAI's units. */
public enum QueueResource {
  /** Cards; fractions count as parts of a card (0.51 is 51 % of one card). */
  GPU("gpu"),
  /** Millicores. */
  CPU("cpu"),
  /** Megabytes (10^6 bytes). */
  MEMORY("memory");

  private final String key;

  QueueResource(String key) {
    this.key = key;
  }

  /** The key in a Queue's {@code spec.resources}: {@code gpu}, {@code cpu} or {@code memory}. */
  public String key() {
    return key;
  }
}
