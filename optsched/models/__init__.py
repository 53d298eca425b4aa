"""DNN workload profiles (TOML) shipped with optsched; see :mod:`optsched.profiles`."""
