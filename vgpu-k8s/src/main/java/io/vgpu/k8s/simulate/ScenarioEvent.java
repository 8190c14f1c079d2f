package io.vgpu.k8s.simulate;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.yaml.Position;

/** One event of a scenario, replayed in order. */
public sealed interface ScenarioEvent {

  /** Where the event is written. */
  Position position();

  /** The event in the timeline's words, e.g. {@code create default/p1}. */
  String describe();

  /**
   * A pod is submitted.
   *
   * @param position where the event is written
   * @param pod the manifest as submitted
   * @param ref the pod's namespace and name
   */
  record Create(Position position, Pod pod, PodRef ref) implements ScenarioEvent {
    @Override
    public String describe() {
      return "create " + ref;
    }
  }

  /**
   * A pod is deleted.
   *
   * @param position where the event is written
   * @param ref the pod
   */
  record Delete(Position position, PodRef ref) implements ScenarioEvent {
    @Override
    public String describe() {
      return "delete " + ref;
    }
  }

  /**
   * The device configuration changes; every node re-registers with it and keeps its usage.
   *
   * @param position where the event is written
   * @param config the configuration from now on
   * @param changes the keys set, as {@code key=value} pairs separated by spaces
   */
  record SetConfig(Position position, DeviceConfig config, String changes) implements ScenarioEvent {
    @Override
    public String describe() {
      return "setConfig " + changes;
    }
  }
}
