package io.vgpu.k8s.watchdog;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.vgpu.k8s.pod.PodRefs;
import java.math.BigDecimal;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The whole cards containers hold on this node (the node agent under KAI Scheduler serves whole cards
 * as NVIDIA's device plugin does): each container holds, as its grant, all the memory of the cards
 * kubelet's device manager gave it, as kubelet's PodResources API reports them. When kubelet cannot be
 * asked, a container that asks for the resource is granted whole memory on every card of this node
 * (any of them is one its Allocate could have received): the watchdog then errs towards letting a
 * whole-card container be, never towards killing one. A container kubelet gave no card holds none.
 */
public final class WholeCardGrants {
  private final Supplier<Optional<Map<String, List<String>>>> kubelet;
  private final String resourceName;
  private final Supplier<Set<String>> nodeCards;

  /**
   * Whole-card grants.
   *
   * @param kubelet the device IDs kubelet gave each container ({@code namespace/pod/container}), empty
   *     when kubelet cannot be asked (e.g. {@link KubeletPodResources#list})
   * @param resourceName the resource whole cards are served as
   * @param nodeCards this node's cards
   */
  public WholeCardGrants(Supplier<Optional<Map<String, List<String>>>> kubelet, String resourceName, Supplier<Set<String>> nodeCards) {
    this.kubelet = kubelet;
    this.resourceName = resourceName;
    this.nodeCards = nodeCards;
  }

  /** One poll's view: kubelet asked at most once. */
  View view() {
    return new View();
  }

  /** What kubelet said during one poll. */
  final class View {
    private Optional<Map<String, List<String>>> assigned;

    /** The cards {@code container} of {@code pod} holds whole; empty when it holds none. */
    List<String> of(Pod pod, String container) {
      if (assigned == null) {
        assigned = kubelet.get();
      }
      if (assigned.isPresent()) {
        return assigned.get().getOrDefault(PodRefs.of(pod).namespace() + "/" + PodRefs.of(pod).name() + "/" + container, List.of());
      }
      return asksForCards(pod, container) ? List.copyOf(nodeCards.get()) : List.of();
    }
  }

  private boolean asksForCards(Pod pod, String name) {
    for (Container c : PodRefs.containers(pod)) {
      if (name.equals(c.getName()) && c.getResources() != null) {
        for (Map<String, Quantity> amounts : Arrays.asList(c.getResources().getLimits(), c.getResources().getRequests())) {
          Quantity q = amounts == null ? null : amounts.get(resourceName);
          if (q != null && q.getNumericalAmount().compareTo(BigDecimal.ZERO) > 0) {
            return true;
          }
        }
      }
    }
    return false;
  }
}
