package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.vgpu.core.Engine;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.kai.KaiQueueManifest;
import io.vgpu.k8s.pod.PodJson;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JsonNode;

/**
 * KAI Scheduler's Queues ({@code scheduling.run.ai/v2}) and PodGroups ({@code scheduling.run.ai/v2alpha2})
 * as vgpu's scheduler follows them with {@code --kai-dialect}: through informers, each Queue into the
 * engine ({@link Engine#upsertQueue}, {@link Engine#removeQueue} when deleted: pods holding grants in it
 * keep them counted), each PodGroup into a view of its {@code minMember} and {@code queue}.
 *
 * <p>Bad input is reported, never fatal: a value of a Queue KAI cannot mean ({@link KaiQueueManifest}), a
 * parent that does not exist and a cycle of parents are each one Warning Event on the Queue ({@value
 * #QUEUE_INVALID}), recorded once for as long as the problem lasts, and one log line. The queue is still
 * applied, so that the engine makes its pods wait with the reason ({@code QueueMissing}: under a missing
 * parent or a cycle; not a leaf). A PodGroup whose {@code minMember} is not a positive integer holds its
 * gang with that reason.
 *
 * <p>Every change tells the listeners ({@link #onChange}), so that pods waiting for a queue or a gang are
 * tried again: kube-scheduler does not watch these objects.
 */
final class KaiObjects implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(KaiObjects.class);

  /** The reason of the Events on a Queue whose spec cannot be taken as written. */
  static final String QUEUE_INVALID = "QueueInvalid";

  /** Queues. */
  static final ResourceDefinitionContext QUEUES = context(KaiKeys.QUEUE_API_VERSION, "Queue", "queues", false);
  /** PodGroups. */
  static final ResourceDefinitionContext POD_GROUPS = context(KaiKeys.POD_GROUP_API_VERSION, "PodGroup", "podgroups", true);

  /**
   * A PodGroup as the scheduler reads it.
   *
   * @param minMember its {@code spec.minMember}, 1 when absent (KAI's {@code max(minMember, 1)})
   * @param queue its {@code spec.queue}, when it names one
   * @param problem why its minimum cannot be read, when it cannot: its gang waits with this line
   */
  record PodGroup(int minMember, Optional<String> queue, Optional<String> problem) {}

  private final KubernetesClient client;
  private final Engine engine;
  private final EventRecorder events;
  private final Map<String, PodGroup> podGroups = new ConcurrentHashMap<>();
  /** The problems last reported per queue, so that each is one Event while it lasts. */
  private final Map<String, Set<String>> reported = new ConcurrentHashMap<>();
  /** Each queue's own problems (its fields), by name. */
  private final Map<String, List<String>> ownProblems = new LinkedHashMap<>();
  private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
  private final Object lock = new Object();
  /** Whether the caches are filled: until then the tree is not judged (a queue may arrive before its parent). */
  private boolean synced;
  private @Nullable SharedIndexInformer<GenericKubernetesResource> queues;
  private @Nullable SharedIndexInformer<GenericKubernetesResource> groups;

  KaiObjects(KubernetesClient client, Engine engine, EventRecorder events) {
    this.client = client;
    this.engine = engine;
    this.events = events;
  }

  private static ResourceDefinitionContext context(String apiVersion, String kind, String plural, boolean namespaced) {
    String[] gv = apiVersion.split("/");
    return new ResourceDefinitionContext.Builder().withGroup(gv[0]).withVersion(gv[1]).withKind(kind).withPlural(plural).withNamespaced(namespaced).build();
  }

  /**
   * Starts the informers and blocks until both caches are filled and every Queue is in the engine.
   *
   * @throws IllegalStateException when the caches do not fill within {@code timeout} (are the CRDs installed?)
   */
  void start(Duration timeout) {
    queues = client.genericKubernetesResources(QUEUES).runnableInformer(0);
    queues.addEventHandler(new Handler(true));
    groups = client.genericKubernetesResources(POD_GROUPS).inAnyNamespace().runnableInformer(0);
    groups.addEventHandler(new Handler(false));
    for (SharedIndexInformer<GenericKubernetesResource> informer : List.of(queues, groups)) {
      try {
        informer.start().toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      } catch (Exception e) {
        throw new IllegalStateException("KAI's Queues and PodGroups (scheduling.run.ai) could not be listed within " + timeout
            + " (are their CRDs installed? the chart's vgpu.kaiDialect.installCRDs): " + cause(e), e);
      }
    }
    synchronized (lock) {
      queues.getIndexer().list().forEach(this::applyQueue);
      groups.getIndexer().list().forEach(this::applyPodGroup);
      synced = true;
      checkTree();
    }
  }

  /** Tells {@code listener} of every change of a Queue or PodGroup; it must return at once. */
  void onChange(Runnable listener) {
    listeners.add(listener);
  }

  /** The PodGroup {@code namespace/name}, if it exists. */
  Optional<PodGroup> podGroup(String namespace, String name) {
    return Optional.ofNullable(podGroups.get(namespace + "/" + name));
  }

  @Override
  public void close() {
    if (queues != null) {
      queues.close();
    }
    if (groups != null) {
      groups.close();
    }
  }

  private final class Handler implements ResourceEventHandler<GenericKubernetesResource> {
    private final boolean queue;

    Handler(boolean queue) {
      this.queue = queue;
    }

    @Override
    public void onAdd(GenericKubernetesResource object) {
      changed(object, false);
    }

    @Override
    public void onUpdate(GenericKubernetesResource old, GenericKubernetesResource object) {
      changed(object, false);
    }

    @Override
    public void onDelete(GenericKubernetesResource object, boolean finalStateUnknown) {
      changed(object, true);
    }

    private void changed(GenericKubernetesResource object, boolean deleted) {
      synchronized (lock) {
        if (queue) {
          if (deleted) {
            String name = object.getMetadata().getName();
            engine.removeQueue(name);
            ownProblems.remove(name);
            reported.remove(name);
          } else {
            applyQueue(object);
          }
          if (synced) {
            checkTree();
          }
        } else if (deleted) {
          podGroups.remove(object.getMetadata().getNamespace() + "/" + object.getMetadata().getName());
        } else {
          applyPodGroup(object);
        }
      }
      listeners.forEach(Runnable::run);
    }
  }

  /** Puts a Queue into the engine as {@link KaiQueueManifest} reads it; one that cannot be read at all is removed. */
  private void applyQueue(GenericKubernetesResource object) {
    JsonNode json = PodJson.mapper().valueToTree(object);
    Optional<KaiQueueManifest> read = KaiQueueManifest.read(json);
    if (read.isEmpty()) {
      return;
    }
    KaiQueueManifest queue = read.get();
    ownProblems.put(queue.name(), queue.problems());
    if (queue.spec().isPresent()) {
      engine.upsertQueue(queue.spec().get());
    } else {
      engine.removeQueue(queue.name());
    }
  }

  private void applyPodGroup(GenericKubernetesResource object) {
    JsonNode spec = PodJson.mapper().valueToTree(object).path("spec");
    String key = object.getMetadata().getNamespace() + "/" + object.getMetadata().getName();
    JsonNode min = spec.path("minMember");
    int minMember = 1;
    Optional<String> problem = Optional.empty();
    if (!min.isMissingNode() && !min.isNull()) {
      if (min.isIntegralNumber() && min.canConvertToInt()) {
        minMember = Math.max(1, min.asInt());
      } else {
        problem = Optional.of("PodGroup " + key + ": spec.minMember " + min + " is not an integer: its members wait until it is one");
        LOG.warn("{}", problem.get());
      }
    }
    JsonNode queue = spec.path("queue");
    Optional<String> named = queue.isString() && !queue.asString().isEmpty() ? Optional.of(queue.asString()) : Optional.empty();
    podGroups.put(key, new PodGroup(minMember, named, problem));
  }

  /**
   * Reports, once each, every queue's problems: its own fields' and those of its place in the tree (a
   * parent that does not exist, a cycle). A problem that went away may be reported again if it returns.
   */
  private void checkTree() {
    Map<String, QueueSpec> specs = new LinkedHashMap<>();
    engine.queues().forEach(q -> specs.put(q.name(), q));
    Map<String, List<String>> now = new LinkedHashMap<>();
    ownProblems.forEach((name, problems) -> now.put(name, new ArrayList<>(problems)));
    for (QueueSpec q : specs.values()) {
      treeProblem(q, specs).ifPresent(p -> now.computeIfAbsent(q.name(), k -> new ArrayList<>()).add(p));
    }
    reported.keySet().removeIf(name -> !now.containsKey(name));
    now.forEach((name, problems) -> {
      Set<String> before = reported.getOrDefault(name, Set.of());
      Set<String> current = new HashSet<>(problems);
      for (String problem : problems) {
        if (!before.contains(problem)) {
          LOG.warn("{}", problem);
          events.warning(queueReference(name), QUEUE_INVALID, problem);
        }
      }
      reported.put(name, current);
    });
  }

  /** Why a queue's place in the tree keeps its pods waiting: a missing parent or a cycle; empty when it has none. */
  private static Optional<String> treeProblem(QueueSpec queue, Map<String, QueueSpec> specs) {
    Set<String> seen = new HashSet<>();
    seen.add(queue.name());
    for (Optional<String> parent = queue.parent(); parent.isPresent(); ) {
      QueueSpec p = specs.get(parent.get());
      if (p == null) {
        return Optional.of("Queue " + queue.name() + ": spec.parentQueue chain reaches queue " + parent.get() + ", which does not exist: its pods wait (QueueMissing)");
      }
      if (!seen.add(p.name())) {
        return Optional.of("Queue " + queue.name() + ": spec.parentQueue chain runs in a cycle through queue " + p.name() + ": its pods wait (QueueMissing)");
      }
      parent = p.parent();
    }
    return Optional.empty();
  }

  private static ObjectReference queueReference(String name) {
    return new ObjectReferenceBuilder().withApiVersion(KaiKeys.QUEUE_API_VERSION).withKind("Queue").withName(name).build();
  }

  /** The innermost cause's first line: why an informer could not start. */
  private static String cause(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    return Objects.toString(t.getMessage(), t.getClass().getSimpleName()).lines().findFirst().orElse("");
  }
}
