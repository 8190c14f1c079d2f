package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import java.util.function.Consumer;

/**
 * An informer handler for state settled from the cache: an event only says which object changed, so
 * an add, an update and a delete all hand the object to the same reconciler, which reads the cache's
 * current copy itself.
 *
 * @param <T> the informer's resource
 */
final class ReconcileOnEvent<T> implements ResourceEventHandler<T> {
  private final Consumer<T> reconcile;

  ReconcileOnEvent(Consumer<T> reconcile) {
    this.reconcile = reconcile;
  }

  @Override
  public void onAdd(T object) {
    reconcile.accept(object);
  }

  @Override
  public void onUpdate(T old, T object) {
    reconcile.accept(object);
  }

  @Override
  public void onDelete(T object, boolean finalStateUnknown) {
    reconcile.accept(object);
  }
}
