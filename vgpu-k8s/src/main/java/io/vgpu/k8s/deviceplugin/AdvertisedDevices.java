package io.vgpu.k8s.deviceplugin;

import io.vgpu.api.SchedulableDevice;
import io.vgpu.k8s.deviceplugin.v1beta1.Device;
import io.vgpu.k8s.deviceplugin.v1beta1.ListAndWatchResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.NUMANode;
import io.vgpu.k8s.deviceplugin.v1beta1.TopologyInfo;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * What the plugin advertises to kubelet: every card once per sharing slot, as {@code <UUID>-<i>} for
 * {@code i} below its split count (HAMi's replica IDs), or, {@linkplain #wholeCards() for whole cards}
 * (the node agent under KAI Scheduler, as NVIDIA's device plugin), every card once by its UUID; each
 * with its card's health and, when enabled, its NUMA node. Listeners (kubelet's ListAndWatch streams)
 * hear every change.
 */
public final class AdvertisedDevices {
  /** Health words kubelet understands. */
  public static final String HEALTHY = "Healthy";

  /** See {@link #HEALTHY}. */
  public static final String UNHEALTHY = "Unhealthy";

  private final boolean numaTopology;
  private final boolean wholeCards;
  private final List<Consumer<ListAndWatchResponse>> listeners = new CopyOnWriteArrayList<>();
  private volatile List<SchedulableDevice> devices = List.of();
  private volatile ListAndWatchResponse current = ListAndWatchResponse.getDefaultInstance();

  /** Advertises devices, with NUMA topology when {@code numaTopology} (HAMi's {@code enableNumaTopology}). */
  public AdvertisedDevices(boolean numaTopology) {
    this(numaTopology, false);
  }

  /**
   * Advertises devices, with NUMA topology when {@code numaTopology}; with {@code wholeCards} each card
   * once, its ID its UUID, whatever its split count.
   */
  public AdvertisedDevices(boolean numaTopology, boolean wholeCards) {
    this.numaTopology = numaTopology;
    this.wholeCards = wholeCards;
  }

  /** Whether each card is advertised once, by its UUID. */
  public boolean wholeCards() {
    return wholeCards;
  }

  /** Replaces the device set; listeners hear of it only when something kubelet sees changed. */
  public void update(List<SchedulableDevice> next) {
    ListAndWatchResponse response = render(next);
    synchronized (this) {
      devices = List.copyOf(next);
      if (response.equals(current)) {
        return;
      }
      current = response;
    }
    listeners.forEach(l -> l.accept(response));
  }

  /** The devices last set. */
  public List<SchedulableDevice> devices() {
    return devices;
  }

  /** The current list as kubelet sees it. */
  public ListAndWatchResponse current() {
    return current;
  }

  /** Registers a listener and hands it the current list at once. Returns a handle that removes it. */
  public Runnable listen(Consumer<ListAndWatchResponse> listener) {
    listeners.add(listener);
    listener.accept(current);
    return () -> listeners.remove(listener);
  }

  private ListAndWatchResponse render(List<SchedulableDevice> cards) {
    ListAndWatchResponse.Builder out = ListAndWatchResponse.newBuilder();
    for (SchedulableDevice card : cards) {
      int ids = wholeCards ? 1 : card.splitCount();
      for (int i = 0; i < ids; i++) {
        Device.Builder d = Device.newBuilder().setID(wholeCards ? card.uuid() : replicaId(card.uuid(), i)).setHealth(card.healthy() ? HEALTHY : UNHEALTHY);
        if (numaTopology) {
          d.setTopology(TopologyInfo.newBuilder().addNodes(NUMANode.newBuilder().setID(card.numa())));
        }
        out.addDevices(d);
      }
    }
    return out.build();
  }

  /** The ID of replica {@code i} of a card. */
  public static String replicaId(String uuid, int i) {
    return uuid + "-" + i;
  }

  /** The card a replica ID belongs to: the ID without its {@code -<i>} suffix. */
  public static String cardOf(String replicaId) {
    int dash = replicaId.lastIndexOf('-');
    if (dash < 0 || dash == replicaId.length() - 1) {
      return replicaId;
    }
    for (int i = dash + 1; i < replicaId.length(); i++) {
      if (!Character.isDigit(replicaId.charAt(i))) {
        return replicaId;
      }
    }
    return replicaId.substring(0, dash);
  }
}
