package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Follows kube-scheduler's own leader election, as HAMi does: the extender runs beside a
 * kube-scheduler in the same pod, so it leads while that kube-scheduler's Lease names this pod
 * ({@code holderIdentity} is the pod's hostname, {@code _} and a UUID, as kube-scheduler writes it) and the lease has not run out since it was
 * last seen. This keeps the extender that writes in step with the scheduler that calls it, without a
 * second election.
 */
public final class LeaseLeadership implements Leadership {
  private static final Logger LOG = LoggerFactory.getLogger(LeaseLeadership.class);
  /** kube-scheduler's holder identity is the hostname, this separator and a UUID. */
  private static final String HOLDER_SEPARATOR = "_";

  private final String identity;
  private final Clock clock;
  private final List<Runnable> callbacks = new CopyOnWriteArrayList<>();
  private final SharedIndexInformer<Lease> informer;
  private volatile @Nullable Lease observed;
  private volatile Instant observedAt = Instant.EPOCH;

  /**
   * Starts watching the lease.
   *
   * @param identity this pod's hostname; the lease's holder must be it followed by {@code _}
   */
  public LeaseLeadership(KubernetesClient client, String namespace, String name, String identity, Clock clock) {
    this.identity = identity;
    this.clock = clock;
    this.informer =
        client.leases().inNamespace(namespace).withName(name).inform(
            new ResourceEventHandler<>() {
              @Override
              public void onAdd(Lease lease) {
                observe(null, lease);
              }

              @Override
              public void onUpdate(Lease old, Lease lease) {
                observe(old, lease);
              }

              @Override
              public void onDelete(Lease lease, boolean finalStateUnknown) {
                observe(lease, null);
              }
            });
  }

  private void observe(@Nullable Lease before, @Nullable Lease after) {
    boolean wasLeader = holds(before);
    observed = after;
    observedAt = clock.instant();
    boolean leads = holds(after);
    if (leads && !wasLeader) {
      LOG.info("started leading: lease held by {}", after.getSpec().getHolderIdentity());
      callbacks.forEach(Runnable::run);
    } else if (!leads && wasLeader) {
      LOG.info("stopped leading");
    }
  }

  private boolean holds(@Nullable Lease lease) {
    if (lease == null || lease.getSpec() == null || lease.getSpec().getHolderIdentity() == null) {
      return false;
    }
    return heldBy(lease.getSpec().getHolderIdentity(), identity);
  }

  /**
   * Whether a Lease holder, as kube-scheduler writes it ({@code <hostname>_<uuid>}), is this instance:
   * the identity and the separator, so that {@code x-1} does not lead while {@code x-10_...} holds it.
   */
  static boolean heldBy(String holder, String identity) {
    return !identity.isEmpty() && holder.startsWith(identity + HOLDER_SEPARATOR);
  }

  @Override
  public boolean isLeader() {
    Lease lease = observed;
    if (!holds(lease)) {
      return false;
    }
    Integer seconds = lease.getSpec().getLeaseDurationSeconds();
    Duration duration = Duration.ofSeconds(seconds == null ? 15 : seconds);
    return observedAt.plus(duration).isAfter(clock.instant());
  }

  @Override
  public void onStartedLeading(Runnable callback) {
    callbacks.add(callback);
    if (isLeader()) {
      callback.run();
    }
  }

  @Override
  public void close() {
    informer.close();
  }
}
