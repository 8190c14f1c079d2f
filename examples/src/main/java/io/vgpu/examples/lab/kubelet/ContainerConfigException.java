package io.vgpu.examples.lab.kubelet;

/**
 * A container whose configuration kubelet cannot make yet (a ConfigMap or key its env needs is missing):
 * it waits with reason {@code CreateContainerConfigError} and this message, and is tried again when the
 * ConfigMaps change.
 */
public final class ContainerConfigException extends Exception {
  private static final long serialVersionUID = 1L;

  /** An error with kubelet's message. */
  public ContainerConfigException(String message) {
    super(message);
  }
}
