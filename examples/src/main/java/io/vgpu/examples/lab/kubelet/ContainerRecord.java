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
  /** kubelet's waiting reason for a container whose configuration cannot be made. */
  public static final String CONFIG_ERROR = "CreateContainerConfigError";
  private final String name;
  private final boolean init;
  private final Map<String, String> allocatedEnv;
  private final List<String> deviceIds;
  private final Map<String, List<String>> devicesByResource;
  private @Nullable RunningContainer current;
  private int restarts;
  private boolean startedOnce;
  private @Nullable Instant finishedAt;
  private String waitingReason = "ContainerCreating";
  private String waitingMessage = "";
  private Map<String, String> processEnv = Map.of();

  ContainerRecord(String name, boolean init, Map<String, String> allocatedEnv, List<String> deviceIds, Map<String, List<String>> devicesByResource) {
    this.devicesByResource = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(devicesByResource));
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

  /** The device IDs kubelet allocated to it, by the resource they are of, as PodResources lists them. */
  public Map<String, List<String>> devicesByResource() {
    return devicesByResource;
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

  /** kubelet's message while waiting, empty when it has none. */
  public synchronized String waitingMessage() {
    return waitingMessage;
  }

  /** Whether it waits for its configuration (a ConfigMap or key its env needs), which a ConfigMap change may bring. */
  public synchronized boolean waitingForConfig() {
    return current == null && waitingReason.equals(CONFIG_ERROR);
  }

  /** The environment its last process received, in name order; empty before it first started. */
  public synchronized Map<String, String> processEnv() {
    return processEnv;
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
    processEnv = new java.util.TreeMap<>(container.spec().env());
    waitingReason = "ContainerCreating";
    waitingMessage = "";
    startedOnce = true;
    finishedAt = null;
  }

  synchronized void finished() {
    finishedAt = Instant.now();
  }

  synchronized void waiting(String reason) {
    waiting(reason, "");
  }

  synchronized void waiting(String reason, String message) {
    waitingReason = reason;
    waitingMessage = message;
  }

  /** running, terminated or waiting, as a container status reports it. */
  public synchronized String state() {
    if (current != null && current.alive()) {
      return "running";
    }
    return current != null && finishedAt != null ? "terminated" : "waiting";
  }
}
