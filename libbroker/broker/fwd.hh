#pragma once

// Forward declarations of the public API.

namespace broker {

class address;
class configuration;
class data;
class data_message;
class endpoint;
class endpoint_id;
class error;
class hub;
class port;
class publisher;
class status;
class status_subscriber;
class subnet;
class subscriber;
class topic;

namespace internal {
class endpoint_context;
class local_queue;
class local_source;
} // namespace internal

} // namespace broker
