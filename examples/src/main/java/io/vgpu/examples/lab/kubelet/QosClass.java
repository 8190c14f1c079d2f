package io.vgpu.examples.lab.kubelet;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** A pod's QoS class from its containers' CPU and memory requests and limits, as the API server computes it. */
final class QosClass {
  private QosClass() {}

  /** Guaranteed, Burstable or BestEffort. */
  static String of(Pod pod) {
    boolean any = false;
    boolean guaranteed = true;
    List<Container> all = new ArrayList<>(pod.getSpec().getContainers());
    Optional.ofNullable(pod.getSpec().getInitContainers()).ifPresent(all::addAll);
    for (Container c : all) {
      Map<String, Quantity> limits = c.getResources() == null || c.getResources().getLimits() == null ? Map.of() : c.getResources().getLimits();
      Map<String, Quantity> requests = c.getResources() == null || c.getResources().getRequests() == null ? Map.of() : c.getResources().getRequests();
      for (String r : List.of("cpu", "memory")) {
        any |= limits.containsKey(r) || requests.containsKey(r);
        Quantity limit = limits.get(r);
        Quantity request = requests.getOrDefault(r, limit);
        guaranteed &= limit != null && request != null && Quantity.getAmountInBytes(limit).compareTo(Quantity.getAmountInBytes(request)) == 0;
      }
    }
    return !any ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
  }
}
