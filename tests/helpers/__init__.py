"""What the test suites share besides tests/conftest.py's fixtures: imported as ``helpers.<module>``
(tests/conftest.py puts tests/ on sys.path and loads the modules with fixtures as its plugins).

- ``ansible_run``: Ansible's commands from the checkout with Ansible's environment: ``run`` a
  command, ``ansible_playbook`` a playbook (the one way the tests run one); a failure reports the
  command and the end of its output.
- ``sandbox_run``: Ansible against the sandbox's real test hosts (inventories/sandbox): playbooks
  with the session's vault, ad-hoc commands, the PLAY RECAP, which fixture holds the hosts.
- ``secured_sandbox``: what the locked-down sandbox's tests look at (a host's changes to its base
  image, every argv on the machine while site.yml runs, HTTP requests with or without a key).
- ``cluster_sandbox``: the locked-down sandbox's hosts and deployment shared by tests/cluster and
  tests/security (fixtures ``sandbox_hosts``, ``deployed``, ``cluster``; a pytest plugin).
- ``collection_artifact``: the collection's built artifact and its dependencies' tarballs, for
  tests/collection (fixture ``artifact``; a pytest plugin).
- ``awx_jobs``: AWX's jobs without an AWX (tools/awx.py's private data folder run by the real
  ansible-runner), for tests/integration/test_awx.py and tests/cluster.
- ``pki``: a throwaway CA and a server certificate for 127.0.0.1, for the TLS tests.
- ``pngread``: a standard-library PNG reader for the screenshots the tests take.
- ``traffic``: bounded client load through a deployment's front door with ``vllm bench serve``
  (tests/ha).
"""
