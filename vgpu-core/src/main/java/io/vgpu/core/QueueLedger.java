package io.vgpu.core;

import io.vgpu.core.queue.QueueAllocation;
import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.core.queue.ResourceTerms;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The queue tree and what the pods charged to each queue hold, with each queue's limit checked against
 * the total of its subtree. One lock covers a charge's walk up the tree, so two reservations in queues
 * that share an ancestor can never both slip under its limit; the walk is as short as the tree is deep.
 * A queue removed while pods still hold grants in it keeps their charge until they release it.
 */
final class QueueLedger {
  private static final class Entry {
    @Nullable QueueSpec spec;
    long gpu;
    long cpu;
    int pods;
    long subtreeGpu;
    long subtreeCpu;
  }

  private final Object lock = new Object();
  /** In creation order, which is KAI's tie-break in the division. */
  private final Map<String, Entry> queues = new LinkedHashMap<>();
  /** How many queues name each queue as their parent. */
  private final Map<String, Integer> children = new LinkedHashMap<>();

  void upsert(QueueSpec spec) {
    synchronized (lock) {
      Entry e = queues.computeIfAbsent(spec.name(), n -> new Entry());
      if (e.spec != null) {
        e.spec.parent().ifPresent(p -> children.merge(p, -1, (a, b) -> a + b == 0 ? null : a + b));
      }
      e.spec = spec;
      spec.parent().ifPresent(p -> children.merge(p, 1, Integer::sum));
      recomputeSubtrees();
    }
  }

  boolean remove(String name) {
    synchronized (lock) {
      Entry e = queues.get(name);
      if (e == null || e.spec == null) {
        return false;
      }
      e.spec.parent().ifPresent(p -> children.merge(p, -1, (a, b) -> a + b == 0 ? null : a + b));
      e.spec = null;
      if (e.pods == 0) {
        queues.remove(name);
      }
      recomputeSubtrees();
      return true;
    }
  }

  List<QueueSpec> specs() {
    synchronized (lock) {
      List<QueueSpec> out = new ArrayList<>();
      queues.values().forEach(e -> {
        if (e.spec != null) {
          out.add(e.spec);
        }
      });
      return out;
    }
  }

  /** Why a pod charged to {@code queue} cannot be placed whatever the cards, or {@code null}. */
  @Nullable Waiting admissible(String queue) {
    synchronized (lock) {
      return missing(queue);
    }
  }

  /**
   * Why a charge would take {@code queue} or an ancestor past its limit now, or {@code null} when it
   * fits (checked without counting it).
   */
  @Nullable Waiting wouldExceed(String queue, long gpu, long cpu) {
    synchronized (lock) {
      Waiting missing = missing(queue);
      return missing != null ? missing : overLimit(queue, gpu, cpu);
    }
  }

  /**
   * Counts a charge. With {@code enforce}, only when the queue exists as a leaf and neither it nor any
   * queue above it would pass its limit; else returns why not. Without, it is counted whatever the tree
   * says (a pod already running is not refused by a queue that changed since).
   */
  @Nullable Waiting tryCharge(String queue, long gpu, long cpu, boolean enforce) {
    synchronized (lock) {
      if (enforce) {
        Waiting refused = missing(queue);
        if (refused == null) {
          refused = overLimit(queue, gpu, cpu);
        }
        if (refused != null) {
          return refused;
        }
      }
      Entry e = queues.computeIfAbsent(queue, n -> new Entry());
      e.gpu += gpu;
      e.cpu += cpu;
      e.pods++;
      addToChain(queue, gpu, cpu);
      return null;
    }
  }

  void uncharge(String queue, long gpu, long cpu) {
    synchronized (lock) {
      Entry e = queues.get(queue);
      if (e == null) {
        throw new IllegalStateException("queue " + queue + " holds no charge to return");
      }
      e.gpu -= gpu;
      e.cpu -= cpu;
      e.pods--;
      addToChain(queue, -gpu, -cpu);
      if (e.spec == null && e.pods == 0) {
        queues.remove(queue);
      }
    }
  }

  List<QueueAllocation> allocations() {
    synchronized (lock) {
      List<QueueAllocation> out = new ArrayList<>(queues.size());
      queues.forEach((name, e) -> out.add(new QueueAllocation(name, Optional.ofNullable(e.spec), e.gpu, e.cpu, e.pods, e.subtreeGpu, e.subtreeCpu)));
      return out;
    }
  }

  private @Nullable Waiting missing(String queue) {
    Entry e = queues.get(queue);
    if (e == null || e.spec == null) {
      return new Waiting(Waiting.Reason.QUEUE_MISSING, "queue " + queue + " does not exist");
    }
    if (children.containsKey(queue)) {
      return new Waiting(Waiting.Reason.QUEUE_MISSING, "queue " + queue + " has child queues; only a leaf queue takes pods");
    }
    Set<String> seen = new HashSet<>();
    seen.add(queue);
    for (Optional<String> parent = e.spec.parent(); parent.isPresent(); ) {
      String p = parent.get();
      Entry pe = queues.get(p);
      if (pe == null || pe.spec == null) {
        return new Waiting(Waiting.Reason.QUEUE_MISSING, "queue " + queue + " is under queue " + p + ", which does not exist");
      }
      if (!seen.add(p)) {
        return new Waiting(Waiting.Reason.QUEUE_MISSING, "queue " + queue + " is under a cycle of parent queues through " + p);
      }
      parent = pe.spec.parent();
    }
    return null;
  }

  /** Called with a leaf whose chain is whole (no cycle, no missing parent). */
  private @Nullable Waiting overLimit(String queue, long gpu, long cpu) {
    for (String name = queue; name != null; ) {
      Entry e = queues.get(name);
      QueueSpec spec = e.spec;
      String over = over(spec, QueueResource.GPU, e.subtreeGpu, gpu);
      if (over == null) {
        over = over(spec, QueueResource.CPU, e.subtreeCpu, cpu);
      }
      if (over != null) {
        String where = name.equals(queue) ? "queue " + queue : "queue " + name + " (above " + queue + ")";
        return new Waiting(Waiting.Reason.QUEUE_LIMIT, where + ": " + over);
      }
      name = spec.parent().orElse(null);
    }
    return null;
  }

  private static @Nullable String over(QueueSpec spec, QueueResource resource, long held, long asked) {
    ResourceTerms terms = spec.terms(resource);
    if (asked == 0 || terms.unlimited()) {
      return null;
    }
    long limit = resource == QueueResource.GPU ? hundredths(terms.limit()) : (long) Math.floor(terms.limit());
    if (held + asked <= limit) {
      return null;
    }
    if (resource == QueueResource.GPU) {
      return "gpu " + cards(held) + " held + " + cards(asked) + " asked > limit " + cards(limit);
    }
    return "cpu " + held + "m held + " + asked + "m asked > limit " + limit + "m";
  }

  /** A limit in cards as whole hundredths, rounded down (a limit of 2.999 never admits 3 cards). */
  static long hundredths(double cards) {
    return (long) Math.floor(cards * 100 + 1e-6);
  }

  private static String cards(long hundredths) {
    return hundredths % 100 == 0 ? Long.toString(hundredths / 100) : String.format(java.util.Locale.ROOT, "%.2f", hundredths / 100.0);
  }

  /** Adds to the subtree totals of the queue and each ancestor, stopping at a missing parent or a cycle. */
  private void addToChain(String queue, long gpu, long cpu) {
    Set<String> seen = new HashSet<>();
    for (String name = queue; name != null && seen.add(name); ) {
      Entry e = queues.get(name);
      if (e == null) {
        return;
      }
      e.subtreeGpu += gpu;
      e.subtreeCpu += cpu;
      name = e.spec == null ? null : e.spec.parent().orElse(null);
    }
  }

  private void recomputeSubtrees() {
    queues.values().forEach(e -> {
      e.subtreeGpu = 0;
      e.subtreeCpu = 0;
    });
    queues.forEach((name, e) -> addToChain(name, e.gpu, e.cpu));
  }
}
