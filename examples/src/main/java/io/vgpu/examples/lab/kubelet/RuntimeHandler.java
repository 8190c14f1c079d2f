package io.vgpu.examples.lab.kubelet;

import java.util.Optional;

/**
 * The container runtimes a lab node's containerd is configured with, by the handler name a RuntimeClass
 * names: {@code nvidia} (NVIDIA's runtime, also the node's default as the chart's prerequisites require)
 * and {@code runc} (the plain runtime: no driver, no GPU, whatever the container's environment says).
 */
public enum RuntimeHandler {
  /** NVIDIA's runtime: {@link NvidiaRuntime} decides what the container sees. */
  NVIDIA("nvidia"),
  /** The plain OCI runtime. */
  RUNC("runc");

  private final String handler;

  RuntimeHandler(String handler) {
    this.handler = handler;
  }

  /** The handler name in containerd's configuration. */
  public String handler() {
    return handler;
  }

  /** The runtime configured under a handler name; empty for one the node does not have. */
  public static Optional<RuntimeHandler> named(String handler) {
    for (RuntimeHandler h : values()) {
      if (h.handler.equals(handler)) {
        return Optional.of(h);
      }
    }
    return Optional.empty();
  }
}
