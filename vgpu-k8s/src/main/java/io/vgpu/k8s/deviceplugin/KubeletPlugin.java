package io.vgpu.k8s.deviceplugin;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.StatusRuntimeException;
import io.vgpu.k8s.deviceplugin.v1beta1.DevicePluginOptions;
import io.vgpu.k8s.deviceplugin.v1beta1.RegisterRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.RegistrationGrpc;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugin's life with kubelet: serve the DevicePlugin service on a socket in kubelet's
 * device-plugin directory, register it on {@code kubelet.sock}, and do both again whenever kubelet
 * restarts — a restarted kubelet re-creates its socket and forgets every plugin, so the plugin watches
 * that socket's identity and re-registers when it changes.
 */
public final class KubeletPlugin implements AutoCloseable {
  /** kubelet's registration socket, in the device-plugin directory. */
  public static final String KUBELET_SOCKET = "kubelet.sock";

  /** The API version this plugin speaks. */
  public static final String VERSION = "v1beta1";

  private static final Logger LOG = LoggerFactory.getLogger(KubeletPlugin.class);

  private final Path directory;
  private final String endpoint;
  private final String resourceName;
  private final DevicePluginService service;
  private @Nullable Server server;
  private @Nullable Object registeredWith;

  /**
   * A plugin for one resource.
   *
   * @param directory kubelet's device-plugin directory (default {@code /var/lib/kubelet/device-plugins})
   * @param endpoint the plugin's socket file name (HAMi: {@code nvidia-gpu.sock})
   * @param resourceName the extended resource (e.g. {@code nvidia.com/gpu})
   */
  public KubeletPlugin(Path directory, String endpoint, String resourceName, DevicePluginService service) {
    this.directory = directory;
    this.endpoint = endpoint;
    this.resourceName = resourceName;
    this.service = service;
  }

  /**
   * Makes sure the plugin is served and registered with the kubelet that is running now: (re)starts the
   * server and registers when kubelet's socket is new or the plugin's own socket vanished. Cheap when
   * nothing changed; call it periodically.
   *
   * @return whether the plugin is registered with the current kubelet
   */
  public synchronized boolean ensureRegistered() {
    Object kubelet = identity(directory.resolve(KUBELET_SOCKET));
    if (kubelet == null) {
      return false;
    }
    boolean ownSocketGone = identity(directory.resolve(endpoint)) == null;
    if (kubelet.equals(registeredWith) && !ownSocketGone && server != null) {
      return true;
    }
    try {
      restartServer();
      register();
      registeredWith = kubelet;
      LOG.info("registered {} with kubelet as {}", resourceName, endpoint);
      return true;
    } catch (IOException | StatusRuntimeException e) {
      LOG.warn("registering {} with kubelet failed: {}", resourceName, e.getMessage());
      registeredWith = null;
      return false;
    }
  }

  private void restartServer() throws IOException {
    if (server != null) {
      server.shutdownNow();
    }
    server = UnixSockets.serve(directory.resolve(endpoint), service);
  }

  private void register() {
    ManagedChannel channel = UnixSockets.connect(directory.resolve(KUBELET_SOCKET));
    try {
      RegistrationGrpc.newBlockingStub(channel)
          .withDeadlineAfter(10, TimeUnit.SECONDS)
          .register(
              RegisterRequest.newBuilder()
                  .setVersion(VERSION)
                  .setEndpoint(endpoint)
                  .setResourceName(resourceName)
                  .setOptions(DevicePluginOptions.newBuilder().setGetPreferredAllocationAvailable(true))
                  .build());
    } finally {
      channel.shutdownNow();
    }
  }

  /** A socket file's identity (inode and creation time), or null when it does not exist. */
  private static @Nullable Object identity(Path socket) {
    try {
      BasicFileAttributes a = Files.readAttributes(socket, BasicFileAttributes.class);
      return Objects.requireNonNullElse(a.fileKey(), "") + "@" + a.creationTime() + "@" + a.lastModifiedTime();
    } catch (NoSuchFileException e) {
      return null;
    } catch (IOException e) {
      LOG.debug("cannot read {}: {}", socket, e.getMessage());
      return null;
    }
  }

  @Override
  public synchronized void close() {
    if (server != null) {
      server.shutdownNow();
      server = null;
    }
    try {
      Files.deleteIfExists(directory.resolve(endpoint));
    } catch (IOException e) {
      LOG.debug("could not remove {}: {}", endpoint, e.getMessage());
    }
  }
}
