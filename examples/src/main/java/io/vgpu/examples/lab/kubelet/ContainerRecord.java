package io.vgpu.examples.lab.kubelet;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What kubelet knows about one container of a pod: its device allocation, the process running now or
 * last, how many times it restarted, and how the last run ended.
 */
public final class ContainerRecord {
  private final String name;
  private final boolean init;
  private final Map<String, String> allocatedEnv;
  private final List<String> deviceIds;
  private @Nullable RunningContainer current;
  private int restarts;
  private boolean startedOnce;
  private @Nullable Instant finishedAt;
  private String waitingReason = "ContainerCreating";

  ContainerRecord(String name, boolean init, Map<String, String> allocatedEnv, List<String> deviceIds) {
    this.name = name;
    this.init = init;
    this.allocatedEnv = new LinkedHashMap<>(allocatedEnv);
    this.deviceIds = List.copyOf(deviceIds);
  }

  /** The container's name. */
  public String name() {
    return name;
  }

  /** Whether it is an init container. */
  public boolean init() {
    return init;
  }

  /** The environment the device plugin's Allocate gave it, in the plugin's order. */
  public Map<String, String> allocatedEnv() {
    return allocatedEnv;
  }

  /** The device IDs kubelet allocated to it. */
  public List<String> deviceIds() {
    return deviceIds;
  }

  /** The process running now, or the last one. */
  public synchronized @Nullable RunningContainer current() {
    return current;
  }

  /** kubelet's restart count. */
  public synchronized int restarts() {
    return restarts;
  }

  /** Whether a process of it ever started. */
  public synchronized boolean startedOnce() {
    return startedOnce;
  }

  /** Why it is not running, while waiting. */
  public synchronized String waitingReason() {
    return waitingReason;
  }

  /** When its last process ended. */
  public synchronized @Nullable Instant finishedAt() {
    return finishedAt;
  }

  synchronized void started(RunningContainer container) {
    if (startedOnce) {
      restarts++;
    }
    current = container;
    startedOnce = true;
    finishedAt = null;
  }

  synchronized void finished() {
    finishedAt = Instant.now();
  }

  synchronized void waiting(String reason) {
    waitingReason = reason;
  }

  /** running, terminated or waiting, as a container status reports it. */
  public synchronized String state() {
    if (current != null && current.alive()) {
      return "running";
    }
    return current != null && finishedAt != null ? "terminated" : "waiting";
  }
}
