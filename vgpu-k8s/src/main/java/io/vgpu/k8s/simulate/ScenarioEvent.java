package io.vgpu.k8s.simulate;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.PodRef;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.yaml.Position;
import io.vgpu.k8s.yaml.YamlMap;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

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
   * @param written the keys as written in the file, for programs that pass them on (the lab writes
   *     them into the device configuration its components read)
   */
  record SetConfig(Position position, DeviceConfig config, String changes, YamlMap written) implements ScenarioEvent {
    @Override
    public String describe() {
      return "setConfig " + changes;
    }
  }

  /**
   * A component is stopped and started again with the same flags ({@code vgpu lab}); a no-op in {@code
   * vgpu simulate}, where nothing runs.
   *
   * @param position where the event is written
   * @param component {@code scheduler}, or {@code device-plugin/<node>}
   */
  record Restart(Position position, String component) implements ScenarioEvent {
    /** The component name of the scheduler. */
    public static final String SCHEDULER = "scheduler";
    /** The prefix of a node agent's component name. */
    public static final String DEVICE_PLUGIN_PREFIX = "device-plugin/";

    @Override
    public String describe() {
      return "restart " + component;
    }
  }

  /**
   * Time passes ({@code vgpu lab}: running containers keep running); a no-op in {@code vgpu simulate}.
   *
   * @param position where the event is written
   * @param duration how long
   */
  record Wait(Position position, Duration duration) implements ScenarioEvent {
    @Override
    public String describe() {
      long millis = duration.toMillis();
      return "wait " + (millis % 1000 == 0 ? Long.toString(millis / 1000) : Double.toString(millis / 1000.0));
    }
  }

  /**
   * Every component's metrics are recorded in this step ({@code vgpu lab}); a no-op in {@code vgpu
   * simulate}.
   *
   * @param position where the event is written
   */
  record Scrape(Position position) implements ScenarioEvent {
    @Override
    public String describe() {
      return "scrape";
    }
  }

  /**
   * A pod's labels or annotations are changed by a user, as a JSON merge patch of its metadata ({@code
   * vgpu lab}: sent to the API server as that user, whose admission may refuse it); a no-op in {@code vgpu
   * simulate}, where no API server admits writes.
   *
   * @param position where the event is written
   * @param ref the pod
   * @param as who sends it: {@code tenant}, or {@code system:serviceaccount:NAMESPACE:NAME}
   * @param annotations the annotations set (a value) or removed (empty), in the file's order
   * @param labels the labels set or removed, in the file's order
   */
  record Patch(Position position, PodRef ref, String as, Map<String, Optional<String>> annotations, Map<String, Optional<String>> labels) implements ScenarioEvent {
    /** The user a patch is sent as unless it says otherwise. */
    public static final String TENANT = "tenant";
    /** The prefix of a ServiceAccount's user name. */
    public static final String SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:";

    /** A patch; the maps are copied, keeping their order. */
    public Patch {
      annotations = Collections.unmodifiableMap(new LinkedHashMap<>(annotations));
      labels = Collections.unmodifiableMap(new LinkedHashMap<>(labels));
    }

    @Override
    public String describe() {
      return "patch " + ref + " as " + as;
    }
  }

  /**
   * A KAI Queue is created ({@code scheduling.run.ai/v2}, cluster-scoped).
   *
   * @param position where the event is written
   * @param spec the queue as read
   * @param manifest the manifest as written, for programs that create the object ({@code vgpu lab})
   */
  record CreateQueue(Position position, QueueSpec spec, GenericKubernetesResource manifest) implements ScenarioEvent {
    @Override
    public String describe() {
      return "create queue/" + spec.name();
    }
  }

  /**
   * A KAI PodGroup is created ({@code scheduling.run.ai/v2alpha2}).
   *
   * @param position where the event is written
   * @param ref the group's namespace and name
   * @param minMember how many of its pods must be placed together (KAI's default 1)
   * @param queue the queue it names, if any
   * @param manifest the manifest as written, for programs that create the object ({@code vgpu lab})
   */
  record CreatePodGroup(Position position, PodRef ref, int minMember, Optional<String> queue, GenericKubernetesResource manifest) implements ScenarioEvent {
    @Override
    public String describe() {
      return "create podgroup/" + ref;
    }
  }

  /**
   * A KAI Queue or PodGroup is deleted.
   *
   * @param position where the event is written
   * @param kind {@code Queue} or {@code PodGroup}
   * @param namespace the PodGroup's namespace; empty for a Queue
   * @param name the object's name
   */
  record DeleteObject(Position position, String kind, String namespace, String name) implements ScenarioEvent {
    @Override
    public String describe() {
      return "delete " + kind.toLowerCase(java.util.Locale.ROOT) + "/" + (namespace.isEmpty() ? "" : namespace + "/") + name;
    }
  }
}
