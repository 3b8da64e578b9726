"""Issues and their records (comments, worklogs, changelog, attachments, checklist, links):
read and search (:mod:`routes_issues`, :mod:`routes_records`), the ordinary edits a person
makes (:mod:`routes_changes` over :mod:`changes` and :mod:`editing`), the admin ``_import``
family with the service's back-dating rules (:mod:`routes_imports` over :mod:`importing` and
:mod:`import_fields`), and their JSON shapes (:mod:`render`)."""
