package io.vgpu.examples.lab;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.pod.PodRefs;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * When a step of a lab run is done (LAB.md: the lab settles after every event). Not when kube-scheduler
 * alone is idle: kube-scheduler reacts to a change (a pod deleted or ended, a node's registration) through
 * its own informer, and may ask vgpu's extender about a waiting pod before the extender's informer has
 * seen that change, get "no fit" and wait for the next change, which may never come. So a step is done
 * when
 *
 * <ol>
 *   <li>every scheduler has tried every pod since the last change it saw, and every bound pod's
 *       containers started once (or the pod ended);
 *   <li>the components have seen what the API server holds ({@link CaughtUp});
 *   <li>and, when something that can make a waiting pod fit — a grant released, a node's registration, a
 *       component restarted — changed since kube-scheduler last tried its waiting pods, it has tried them
 *       again after the components caught up with it, as kube-scheduler's periodic flush of unschedulable
 *       pods would (after five minutes), and step 1 holds again.
 * </ol>
 *
 * One per run: it remembers what kube-scheduler last retried after.
 */
final class Settling {
  /** What the lab reads and does to decide. */
  interface Cluster {
    /** What the schedulers still have to do, and the bound pods still starting: one line each. */
    List<String> inTransit();

    /** The API objects and every component's metrics, read now. */
    CaughtUp.View view();

    /** Has every scheduler try its unschedulable pods again. */
    void retryUnschedulable();
  }

  /** Pods whose grant was released (deleted, or ended, while holding one), by UID. */
  private final Set<String> released = new HashSet<>();
  private int restarts;
  private String retriedAfter;

  /** Notes a pod that is being deleted: a grant it holds is released. */
  void deleting(Pod pod) {
    if (holdsGrant(pod)) {
      released.add(pod.getMetadata().getUid());
    }
  }

  /** Notes that components restarted (a restart event, or a new device configuration). */
  void restarted() {
    restarts++;
  }

  /**
   * What the step still waits for, one line each; empty when it is done. May have the schedulers try
   * their waiting pods again (see the class comment).
   */
  List<String> waitingFor(Cluster cluster) {
    List<String> transit = cluster.inTransit();
    if (!transit.isEmpty()) {
      return transit;
    }
    CaughtUp.View view = cluster.view();
    List<String> lagging = CaughtUp.lagging(view);
    if (!lagging.isEmpty()) {
      return lagging;
    }
    for (Pod pod : view.pods()) {
      String phase = pod.getStatus() == null ? "" : String.valueOf(pod.getStatus().getPhase());
      if ((phase.equals("Succeeded") || phase.equals("Failed")) && holdsGrant(pod)) {
        released.add(pod.getMetadata().getUid());
      }
    }
    String seen = CaughtUp.registrations(view) + " released=" + released.size() + " restarts=" + restarts;
    if (!seen.equals(retriedAfter)) {
      retriedAfter = seen;
      cluster.retryUnschedulable();
      return List.of("kube-scheduler to try its waiting pods again, now that the components have seen what changed");
    }
    return List.of();
  }

  private static boolean holdsGrant(Pod pod) {
    Map<String, String> annotations = PodRefs.annotations(pod);
    return annotations.containsKey(HamiAnnotations.ASSIGNED_NODE) && annotations.containsKey(HamiAnnotations.DEVICES_ALLOCATED);
  }
}
